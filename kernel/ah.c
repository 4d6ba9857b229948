// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs: address handles.  An AH is a RoCEv2 address vector with a number
 * (ahn) that UD send WQEs name.  Kernel create_ah and destroy_ah may be
 * called in atomic context (without RDMA_CREATE_AH_SLEEPABLE), so the AH
 * table's lock is irq-safe and allocation is GFP_ATOMIC there.
 */
#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

/**
 * urdma_av_from_attr - take a RoCEv2 address vector from AH attributes
 * @av: destination
 * @attr: attributes resolved by the core (sgid_attr set, dmac resolved)
 *
 * Return: 0, or -EINVAL for another port, without a GRH or a source GID.
 */
int urdma_av_from_attr(struct urdma_av *av, const struct rdma_ah_attr *attr)
{
	const struct ib_global_route *grh;

	if (attr->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    rdma_ah_get_port_num(attr) != 1 ||
	    !(rdma_ah_get_ah_flags(attr) & IB_AH_GRH))
		return -EINVAL;
	grh = rdma_ah_read_grh(attr);
	if (!grh->sgid_attr)
		return -EINVAL;

	memset(av, 0, sizeof(*av));
	av->dgid = grh->dgid;
	av->sgid = grh->sgid_attr->gid;
	/*
	 * 20 bits; clients pass more (UCX: ~0 on RoCE), which rxe and mlx5
	 * take too, keeping the low 20.
	 */
	av->flow_label = grh->flow_label & IB_GRH_FLOWLABEL_MASK;
	av->sgid_index = grh->sgid_index;
	av->hop_limit = grh->hop_limit;
	av->traffic_class = grh->traffic_class;
	av->sl = rdma_ah_get_sl(attr);
	av->net_type = rdma_gid_attr_network_type(grh->sgid_attr);
	ether_addr_copy(av->dmac, attr->roce.dmac);
	/* Local path: is the destination a urdma device of this host? */
	av->peer = urdma_devtab_find_gid(&av->dgid,
					 dev_net(to_udev(grh->sgid_attr->device)->ndev));
	return 0;
}

int urdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata)
{
	bool sleepable = init->flags & RDMA_CREATE_AH_SLEEPABLE;
	struct urdma_dev *udev = to_udev(ibah->device);
	struct urdma_create_ah_resp resp = {};
	struct urdma_ah *ah = to_uah(ibah);
	unsigned long flags;
	int ret;

	ret = urdma_udata_no_cmd(udata);
	if (ret)
		return ret;
	ret = urdma_av_from_attr(&ah->av, init->ah_attr);
	if (ret)
		return ret;
	ah->pdn = to_upd(ibah->pd)->pdn;

	if (atomic_inc_return(&udev->nr_ah) > URDMA_MAX_AH) {
		ret = -ENOMEM;
		goto err_count;
	}
	if (sleepable) {
		ret = xa_alloc_cyclic_irq(&udev->ahs, &ah->ahn, ah,
					  XA_LIMIT(1, U32_MAX), &udev->next_ahn,
					  GFP_KERNEL);
	} else {
		xa_lock_irqsave(&udev->ahs, flags);
		ret = __xa_alloc_cyclic(&udev->ahs, &ah->ahn, ah,
					XA_LIMIT(1, U32_MAX), &udev->next_ahn,
					GFP_ATOMIC);
		xa_unlock_irqrestore(&udev->ahs, flags);
	}
	if (ret < 0)
		goto err_count;

	if (udata) {
		resp.ah_num = ah->ahn;
		ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
		if (ret)
			goto err_erase;
	}
	return 0;

err_erase:
	xa_erase_irq(&udev->ahs, ah->ahn);
err_count:
	atomic_dec(&udev->nr_ah);
	return ret == -EBUSY ? -ENOMEM : ret;
}

int urdma_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct urdma_dev *udev = to_udev(ibah->device);
	unsigned long irqflags;

	xa_lock_irqsave(&udev->ahs, irqflags);
	__xa_erase(&udev->ahs, to_uah(ibah)->ahn);
	xa_unlock_irqrestore(&udev->ahs, irqflags);
	atomic_dec(&udev->nr_ah);
	return 0;
}
