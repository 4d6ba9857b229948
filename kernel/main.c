// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma: module life cycle, "rdma link" operations and netdev events.
 *
 * Device teardown order (the one place it is written down):
 *   1. something asks for it: "rdma link delete" (core, nldev_dellink),
 *      the bound netdev unregistering (urdma_netdev_event, queued), or
 *      module exit (urdma_exit, synchronous);
 *   2. the core disassociates user contexts and destroys every object;
 *   3. the core calls urdma_dealloc_driver(), which takes the device off
 *      urdma_devs and drops the netdev reference;
 *   4. the core frees the memory on the last put of the ib_device.
 */
#include <linux/module.h>
#include <rdma/rdma_netlink.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

/*
 * urdma_devs holds every device from newlink until urdma_dealloc_driver.
 * urdma_devs_lock protects the list and the ->registered and ->ndev_gone
 * flags of its entries.  Lock order: RTNL -> urdma_devs_lock.  Never hold it
 * across ib_register_device() or ib_unregister_device().
 */
static LIST_HEAD(urdma_devs);
static DEFINE_MUTEX(urdma_devs_lock);

static struct urdma_dev *urdma_find_by_netdev(struct net_device *ndev)
{
	struct urdma_dev *udev;

	lockdep_assert_held(&urdma_devs_lock);
	list_for_each_entry(udev, &urdma_devs, list)
		if (udev->ndev == ndev)
			return udev;
	return NULL;
}

void urdma_dev_list_del(struct urdma_dev *udev)
{
	mutex_lock(&urdma_devs_lock);
	list_del_init(&udev->list);
	mutex_unlock(&urdma_devs_lock);
}

/* Reserve @ndev for @udev; fails if @ndev already has a urdma device. */
static int urdma_dev_list_add(struct urdma_dev *udev)
{
	int ret = 0;

	mutex_lock(&urdma_devs_lock);
	if (urdma_find_by_netdev(udev->ndev))
		ret = -EEXIST;
	else
		list_add_tail(&udev->list, &urdma_devs);
	mutex_unlock(&urdma_devs_lock);
	return ret;
}

/* Mark @udev registered; false if its netdev went away meanwhile. */
static bool urdma_dev_publish(struct urdma_dev *udev)
{
	bool alive;

	mutex_lock(&urdma_devs_lock);
	udev->registered = true;
	alive = !udev->ndev_gone;
	mutex_unlock(&urdma_devs_lock);
	return alive;
}

static int urdma_newlink(const char *ibdev_name, struct net_device *ndev)
{
	struct urdma_dev *udev;
	int ret;

	udev = urdma_dev_create(ibdev_name, ndev);
	if (IS_ERR(udev))
		return PTR_ERR(udev);

	ret = urdma_dev_list_add(udev);
	if (ret) {
		pr_err_ratelimited("urdma: %s already has an RDMA device\n",
				   netdev_name(ndev));
		goto err_destroy;
	}

	ret = urdma_dev_register(udev, ibdev_name);
	if (ret)
		goto err_list_del;

	if (!urdma_dev_publish(udev)) {
		/* The netdev is unregistering; undo (ends in dealloc). */
		ib_unregister_device(&udev->ibdev);
		return -ENODEV;
	}
	return 0;

err_list_del:
	urdma_dev_list_del(udev);
err_destroy:
	urdma_dev_destroy(udev);
	return ret;
}

static struct rdma_link_ops urdma_link_ops = {
	.type = URDMA_LINK_TYPE,
	.newlink = urdma_newlink,
};

static void urdma_port_event(struct urdma_dev *udev, enum ib_event_type type)
{
	struct ib_event event = {
		.device = &udev->ibdev,
		.event = type,
		.element.port_num = 1,
	};

	ib_dispatch_event(&event);
}

static int urdma_netdev_event(struct notifier_block *nb, unsigned long event,
			      void *arg)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(arg);
	struct urdma_dev *udev;

	mutex_lock(&urdma_devs_lock);
	udev = urdma_find_by_netdev(ndev);
	if (!udev || !udev->registered) {
		if (udev && event == NETDEV_UNREGISTER)
			udev->ndev_gone = true;
		mutex_unlock(&urdma_devs_lock);
		return NOTIFY_DONE;
	}

	switch (event) {
	case NETDEV_UP:
	case NETDEV_CHANGE:
		urdma_port_event(udev, netif_running(ndev) &&
				 netif_carrier_ok(ndev) ?
				 IB_EVENT_PORT_ACTIVE : IB_EVENT_PORT_ERR);
		break;
	case NETDEV_DOWN:
		urdma_port_event(udev, IB_EVENT_PORT_ERR);
		break;
	case NETDEV_UNREGISTER:
		/* Holds a device reference; ends in urdma_dealloc_driver. */
		ib_unregister_device_queued(&udev->ibdev);
		break;
	default:
		break;
	}
	mutex_unlock(&urdma_devs_lock);
	return NOTIFY_DONE;
}

static struct notifier_block urdma_netdev_nb = {
	.notifier_call = urdma_netdev_event,
};

/*
 * Unregister every device, waiting for unregistrations already queued.
 * Called after rdma_link_unregister(), which waits for running newlinks
 * (the core holds its link_ops_rwsem across them), so every device on the
 * list is registered.
 */
static void urdma_unregister_all(void)
{
	struct urdma_dev *udev;

	for (;;) {
		mutex_lock(&urdma_devs_lock);
		udev = list_first_entry_or_null(&urdma_devs, struct urdma_dev,
						list);
		if (udev)
			get_device(&udev->ibdev.dev);
		mutex_unlock(&urdma_devs_lock);
		if (!udev)
			break;
		/* Serialises with any unregistration already under way. */
		ib_unregister_device(&udev->ibdev);
		put_device(&udev->ibdev.dev);
	}
}

static int __init urdma_init(void)
{
	int ret;

	ret = register_netdevice_notifier(&urdma_netdev_nb);
	if (ret)
		return ret;

	rdma_link_register(&urdma_link_ops);
	pr_info("urdma: loaded (ABI %d)\n", URDMA_ABI_VERSION);
	return 0;
}

static void __exit urdma_exit(void)
{
	rdma_link_unregister(&urdma_link_ops);
	urdma_unregister_all();
	unregister_netdevice_notifier(&urdma_netdev_nb);
	pr_info("urdma: unloaded\n");
}

module_init(urdma_init);
module_exit(urdma_exit);

MODULE_AUTHOR("The urdma developers");
MODULE_DESCRIPTION("urdma: software RoCEv2 RDMA adapter");
MODULE_LICENSE("Dual BSD/GPL");
MODULE_ALIAS_RDMA_LINK(URDMA_LINK_TYPE);
