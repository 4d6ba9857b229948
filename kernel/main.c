// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma: module life cycle, "rdma link" operations and netdev events.
 *
 * Device teardown order (the one place it is written down):
 *   1. something asks for it: "rdma link delete" (core, nldev_dellink),
 *      the bound netdev unregistering (urdma_netdev_event, queued), or
 *      module exit (urdma_exit, synchronous);
 *   2. the core disassociates user contexts and destroys every object;
 *   3. the core calls urdma_dealloc_driver(), which takes the device out
 *      of the registry (urdma_devtab_del()) and drops the netdev reference;
 *   4. the core frees the memory on the last put of the ib_device.
 */
#include <linux/module.h>
#include <kunit/visibility.h>
#include <rdma/ib_cache.h>
#include <rdma/rdma_netlink.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

/* ---- the device registry ------------------------------------------------- */

/*
 * Every device from urdma_dev_create() until its release, by a module-wide
 * id, so that the local path can name a peer device in an address vector
 * without holding a reference.  Two kinds of reader:
 *  - the control plane (newlink, netdev events, module exit) sees every
 *    device, under urdma_devs_lock;
 *  - the data path (engine passes, and RCU readers: the local path,
 *    multicast, create_ah) sees only devices marked URDMA_DEV_LIVE, from
 *    urdma_enable_driver() on, when the GID table exists.  Before that,
 *    rdma_find_gid_by_port() would dereference the port data that
 *    ib_register_device() allocates.
 * Removal erases the entry, then waits for both kinds of data-path reader.
 *
 * urdma_devs_lock also protects the ->registered and ->ndev_gone flags.
 * Lock order: RTNL -> urdma_devs_lock.  Never hold it across
 * ib_register_device() or ib_unregister_device().
 */
static DEFINE_XARRAY_FLAGS(urdma_devs, XA_FLAGS_ALLOC1);
static DEFINE_MUTEX(urdma_devs_lock);
#define URDMA_DEV_LIVE	XA_MARK_1

static struct urdma_dev *urdma_find_by_netdev(struct net_device *ndev)
{
	struct urdma_dev *udev;
	unsigned long id;

	lockdep_assert_held(&urdma_devs_lock);
	xa_for_each(&urdma_devs, id, udev)
		if (udev->ndev == ndev)
			return udev;
	return NULL;
}

/* Give @udev its id; fails if its netdev already has a urdma device. */
int urdma_devtab_add(struct urdma_dev *udev)
{
	static u32 next;
	int ret;

	mutex_lock(&urdma_devs_lock);
	if (urdma_find_by_netdev(udev->ndev))
		ret = -EEXIST;
	else	/* cyclic: an AV holding a deleted device's id reaches no other */
		ret = xa_alloc_cyclic(&urdma_devs, &udev->id, udev,
				      xa_limit_32b, &next, GFP_KERNEL);
	mutex_unlock(&urdma_devs_lock);
	return ret < 0 ? ret : 0;
}

/* The device is registered: from here on the data path finds it. */
void urdma_devtab_publish(struct urdma_dev *udev)
{
	xa_set_mark(&urdma_devs, udev->id, URDMA_DEV_LIVE);
}

void urdma_devtab_del(struct urdma_dev *udev)
{
	if (!udev->id)
		return;
	mutex_lock(&urdma_devs_lock);
	xa_erase(&urdma_devs, udev->id);
	mutex_unlock(&urdma_devs_lock);
	synchronize_rcu();
	urdma_engine_sync();
	udev->id = 0;
}

/* In an engine pass or under RCU.  Return: a live device, or NULL. */
struct urdma_dev *urdma_devtab_get(u32 id)
{
	struct urdma_dev *udev = id ? xa_load(&urdma_devs, id) : NULL;

	return udev && xa_get_mark(&urdma_devs, id, URDMA_DEV_LIVE) ?
	       udev : NULL;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_devtab_get);

/**
 * urdma_devtab_next - walk the live devices: the next one from id *@id on
 * @id: where to start; advanced past the device returned
 *
 * For engine passes (devices are removed from the table, then the engines
 * are synced).  Return: a device, or NULL at the end.
 */
struct urdma_dev *urdma_devtab_next(unsigned long *id)
{
	struct urdma_dev *udev = xa_find(&urdma_devs, id, ULONG_MAX,
					 URDMA_DEV_LIVE);

	if (udev)
		(*id)++;
	return udev;
}

/**
 * urdma_devtab_find_gid - the urdma device that owns a GID
 * @gid: a RoCEv2 GID
 * @net: the sender's network namespace
 *
 * The local path joins urdma devices whose netdevs share a network
 * namespace.  Between namespaces, traffic goes through the netdevs as
 * RoCEv2 packets, as between hosts, so that what sits between them (tc,
 * netem, netfilter, a veth pair) applies.  Within one namespace it could
 * not: the IP layer delivers a datagram to a local address over loopback.
 *
 * May be called in atomic context.  Return: the device's id, 0 if no urdma
 * device of this host and namespace has @gid.
 */
u32 urdma_devtab_find_gid(const union ib_gid *gid, const struct net *net)
{
	const struct ib_gid_attr *attr;
	struct urdma_dev *udev;
	unsigned long id;
	u32 found = 0;

	rcu_read_lock();
	xa_for_each_marked(&urdma_devs, id, udev, URDMA_DEV_LIVE) {
		if (!net_eq(dev_net(udev->ndev), net))
			continue;
		attr = rdma_find_gid_by_port(&udev->ibdev, gid,
					     IB_GID_TYPE_ROCE_UDP_ENCAP, 1,
					     NULL);
		if (IS_ERR(attr))
			continue;
		rdma_put_gid_attr(attr);
		found = id;
		break;
	}
	rcu_read_unlock();
	return found;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_devtab_find_gid);

/* ---- rdma link and netdev events ------------------------------------------ */

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
	if (IS_ERR(udev)) {
		if (PTR_ERR(udev) == -EEXIST)
			pr_err_ratelimited("urdma: %s already has an RDMA device\n",
					   netdev_name(ndev));
		return PTR_ERR(udev);
	}

	ret = urdma_dev_register(udev, ibdev_name);
	if (ret) {
		urdma_dev_destroy(udev);
		return ret;
	}

	if (!urdma_dev_publish(udev)) {
		/* The netdev is unregistering; undo (ends in dealloc). */
		ib_unregister_device(&udev->ibdev);
		return -ENODEV;
	}
	return 0;
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
 * (the core holds its link_ops_rwsem across them), so every device in the
 * registry is registered.
 */
static void urdma_unregister_all(void)
{
	struct urdma_dev *udev;
	unsigned long id;

	for (;;) {
		id = 0;
		mutex_lock(&urdma_devs_lock);
		udev = xa_find(&urdma_devs, &id, ULONG_MAX, XA_PRESENT);
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

	ret = urdma_odp_init();
	if (ret)
		return ret;
	ret = register_netdevice_notifier(&urdma_netdev_nb);
	if (ret) {
		urdma_odp_exit();
		return ret;
	}

	rdma_link_register(&urdma_link_ops);
	pr_info("urdma: loaded (ABI %d)\n", URDMA_ABI_VERSION);
	return 0;
}

static void __exit urdma_exit(void)
{
	rdma_link_unregister(&urdma_link_ops);
	urdma_unregister_all();
	unregister_netdevice_notifier(&urdma_netdev_nb);
	urdma_odp_exit();
	pr_info("urdma: unloaded\n");
}

module_init(urdma_init);
module_exit(urdma_exit);

MODULE_AUTHOR("The urdma developers");
MODULE_DESCRIPTION("urdma: software RoCEv2 RDMA adapter");
MODULE_LICENSE("Dual BSD/GPL");
URDMA_IMPORT_DMA_BUF_NS();
MODULE_ALIAS_RDMA_LINK(URDMA_LINK_TYPE);
