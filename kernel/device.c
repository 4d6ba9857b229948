// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma device: attributes, port state and the ib_device life cycle.
 */
#include <linux/if_arp.h>
#include <net/addrconf.h>
#include <kunit/visibility.h>
#include <rdma/ib_mad.h>

#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

/* fw_ver is major.minor.sub in bits 47:32, 31:16 and 15:0 (as siw, rxe). */
#define URDMA_FW_VER_MAJOR	0
#define URDMA_FW_VER_MINOR	1
#define URDMA_FW_VER_SUB	0

/**
 * urdma_mtu_from_netdev - the largest IB MTU a netdev MTU can carry
 * @ndev_mtu: the netdev's MTU in bytes (IP packet size)
 *
 * Leaves room for the RoCEv2 headers and clamps to 256..4096.
 */
enum ib_mtu urdma_mtu_from_netdev(unsigned int ndev_mtu)
{
	static const enum ib_mtu mtus[] = {
		IB_MTU_4096, IB_MTU_2048, IB_MTU_1024, IB_MTU_512,
	};
	unsigned int room;
	int i;

	if (ndev_mtu <= URDMA_ROCE_HDR_ROOM)
		return IB_MTU_256;
	room = ndev_mtu - URDMA_ROCE_HDR_ROOM;
	for (i = 0; i < ARRAY_SIZE(mtus); i++)
		if (room >= ib_mtu_enum_to_int(mtus[i]))
			return mtus[i];
	return IB_MTU_256;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_mtu_from_netdev);

/**
 * urdma_port_state_from_netdev - IB port state of an Ethernet link
 * @running: the netdev is administratively up
 * @carrier: the netdev has carrier
 */
struct urdma_port_state urdma_port_state_from_netdev(bool running,
						     bool carrier)
{
	struct urdma_port_state ps = {
		.state = IB_PORT_DOWN,
		.phys_state = IB_PORT_PHYS_STATE_DISABLED,
	};

	if (running && carrier) {
		ps.state = IB_PORT_ACTIVE;
		ps.phys_state = IB_PORT_PHYS_STATE_LINK_UP;
	} else if (running) {
		ps.phys_state = IB_PORT_PHYS_STATE_POLLING;
	}
	return ps;
}
EXPORT_SYMBOL_IF_KUNIT(urdma_port_state_from_netdev);

/**
 * urdma_fill_device_attr - the device attributes urdma reports
 * @attr: filled from the limits in urdma.h; GUIDs are left to the caller
 */
void urdma_fill_device_attr(struct ib_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->fw_ver = (u64)URDMA_FW_VER_MAJOR << 32 | URDMA_FW_VER_MINOR << 16 |
		       URDMA_FW_VER_SUB;
	attr->max_mr_size = URDMA_MAX_MR_SIZE;
	attr->page_size_cap = URDMA_PAGE_SIZE_CAP;
	attr->vendor_id = URDMA_VENDOR_ID;
	attr->vendor_part_id = URDMA_VENDOR_PART_ID;
	attr->max_qp = URDMA_MAX_QP;
	attr->max_qp_wr = URDMA_MAX_QP_WR;
	attr->device_cap_flags = IB_DEVICE_SYS_IMAGE_GUID |
				 IB_DEVICE_CURR_QP_STATE_MOD |
				 IB_DEVICE_RC_RNR_NAK_GEN |
				 IB_DEVICE_SRQ_RESIZE |
				 IB_DEVICE_MEM_MGT_EXTENSIONS |
				 IB_DEVICE_MEM_WINDOW |
				 IB_DEVICE_MEM_WINDOW_TYPE_2B |
				 IB_DEVICE_XRC |
				 URDMA_DEVICE_FLUSH_ATOMIC_WRITE;
	attr->max_send_sge = URDMA_MAX_SGE;
	attr->max_recv_sge = URDMA_MAX_SGE;
	attr->max_sge_rd = URDMA_MAX_SGE_RD;
	attr->max_cq = URDMA_MAX_CQ;
	attr->max_cqe = URDMA_MAX_CQE;
	attr->max_mr = URDMA_MAX_MR;
	attr->max_mw = URDMA_MAX_MW;
	attr->max_pd = URDMA_MAX_PD;
	attr->max_qp_rd_atom = URDMA_MAX_RD_ATOM;
	attr->max_qp_init_rd_atom = URDMA_MAX_RD_ATOM;
	attr->max_res_rd_atom = URDMA_MAX_QP * URDMA_MAX_RD_ATOM;
	/* The engine's atomics are CPU atomics on the target memory. */
	attr->atomic_cap = IB_ATOMIC_GLOB;
	attr->max_mcast_grp = URDMA_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = URDMA_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = URDMA_MAX_MCAST_GRP *
					  URDMA_MAX_MCAST_QP_ATTACH;
	attr->max_ah = URDMA_MAX_AH;
	attr->max_srq = URDMA_MAX_SRQ;
	attr->max_srq_wr = URDMA_MAX_SRQ_WR;
	attr->max_srq_sge = URDMA_MAX_SRQ_SGE;
	attr->max_pkeys = URDMA_MAX_PKEYS;
	attr->hca_core_clock = URDMA_HCA_CORE_CLOCK_KHZ;
	attr->timestamp_mask = U64_MAX;
	attr->local_ca_ack_delay = URDMA_LOCAL_ACK_DELAY;
	attr->max_fast_reg_page_list_len = URDMA_MAX_FAST_REG_PAGES;
	attr->max_dm_size = URDMA_MAX_DM_SIZE;
	attr->kernel_cap_flags = IBK_ALLOW_USER_UNREG;
	urdma_odp_caps(attr);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_fill_device_attr);

static int urdma_query_device(struct ib_device *ibdev,
			      struct ib_device_attr *attr,
			      struct ib_udata *udata)
{
	int ret;

	/*
	 * ABI v1 has no driver part: a zero command from a newer provider is
	 * fine, a non-zero one asks for something this kernel cannot do, and
	 * there is no driver response to write.
	 */
	ret = urdma_udata_no_cmd(udata);
	if (ret)
		return ret;

	urdma_fill_device_attr(attr);
	attr->sys_image_guid = ibdev->node_guid;
	return 0;
}

static int urdma_query_port(struct ib_device *ibdev, u32 port,
			    struct ib_port_attr *attr)
{
	struct urdma_dev *udev = to_udev(ibdev);
	struct net_device *ndev = udev->ndev;
	struct urdma_port_state ps;
	int ret;

	/* The core zeroes *attr before calling us. */
	ret = ib_get_eth_speed(ibdev, port, &attr->active_speed,
			       &attr->active_width);
	if (ret)
		return ret;

	ps = urdma_port_state_from_netdev(netif_running(ndev),
					  netif_carrier_ok(ndev));
	attr->state = ps.state;
	attr->phys_state = ps.phys_state;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = urdma_mtu_from_netdev(READ_ONCE(ndev->mtu));
	attr->gid_tbl_len = URDMA_GID_TBL_LEN;
	attr->max_msg_sz = URDMA_MAX_MSG_SIZE;
	attr->pkey_tbl_len = URDMA_MAX_PKEYS;
	attr->max_vl_num = 1;
	attr->ip_gids = true;
	return 0;
}

static int urdma_get_port_immutable(struct ib_device *ibdev, u32 port,
				    struct ib_port_immutable *immutable)
{
	struct ib_port_attr attr;
	int ret;

	immutable->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	immutable->max_mad_size = IB_MGMT_MAD_SIZE;

	ret = ib_query_port(ibdev, port, &attr);
	if (ret)
		return ret;

	immutable->pkey_tbl_len = attr.pkey_tbl_len;
	immutable->gid_tbl_len = attr.gid_tbl_len;
	return 0;
}

/* The node type (IB CA) would otherwise make the core assume InfiniBand. */
static enum rdma_link_layer urdma_get_link_layer(struct ib_device *ibdev,
						 u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static int urdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			    u16 *pkey)
{
	if (index >= URDMA_MAX_PKEYS)
		return -EINVAL;

	*pkey = URDMA_DEFAULT_PKEY;
	return 0;
}

static void urdma_get_dev_fw_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%d.%d.%d", URDMA_FW_VER_MAJOR,
		 URDMA_FW_VER_MINOR, URDMA_FW_VER_SUB);
}

/* ---- counters ("rdma statistic") ------------------------------------------ */

static const struct rdma_stat_desc urdma_stat_descs[URDMA_NUM_COUNTERS] = {
	[URDMA_CNT_KICKS] = { .name = "kicks" },
	[URDMA_CNT_WQES] = { .name = "wqes" },
	[URDMA_CNT_POLLS] = { .name = "polls" },
	[URDMA_CNT_SLEEPS] = { .name = "sleeps" },
	[URDMA_CNT_CQES] = { .name = "cqes" },
	[URDMA_CNT_ERR_CQES] = { .name = "err_cqes" },
	[URDMA_CNT_RNR_WAITS] = { .name = "rnr_naks" },
	[URDMA_CNT_RETRIES] = { .name = "retries" },
	[URDMA_CNT_CQ_OVERFLOWS] = { .name = "cq_overflows" },
	[URDMA_CNT_BAD_WQES] = { .name = "bad_wqes" },
	[URDMA_CNT_TX_PKTS] = { .name = "tx_pkts" },
	[URDMA_CNT_RX_PKTS] = { .name = "rx_pkts" },
	[URDMA_CNT_RX_DROPS] = { .name = "rx_drops" },
	[URDMA_CNT_ICRC_ERRS] = { .name = "icrc_errs" },
	[URDMA_CNT_TX_ERRS] = { .name = "tx_errs" },
	[URDMA_CNT_SEQ_NAKS_RCVD] = { .name = "seq_naks_rcvd" },
	[URDMA_CNT_TIMEOUTS] = { .name = "timeouts" },
	[URDMA_CNT_READ_GAPS] = { .name = "read_gaps" },
	[URDMA_CNT_SEQ_NAKS_SENT] = { .name = "seq_naks_sent" },
	[URDMA_CNT_DUP_REQS] = { .name = "dup_reqs" },
	[URDMA_CNT_KICK_RUNS] = { .name = "kick_runs" },
	[URDMA_CNT_YIELDS] = { .name = "yields" },
	[URDMA_CNT_EARLY_TIMEOUTS] = { .name = "early_timeouts" },
	[URDMA_CNT_CWND_CUTS] = { .name = "cwnd_cuts" },
	[URDMA_CNT_RTT_SAMPLES] = { .name = "rtt_samples" },
	[URDMA_CNT_RTT_US] = { .name = "rtt_us" },
	[URDMA_CNT_ECN_MARKED] = { .name = "ecn_marked" },
	[URDMA_CNT_CNPS_SENT] = { .name = "cnps_sent" },
	[URDMA_CNT_CNPS_RCVD] = { .name = "cnps_rcvd" },
	[URDMA_CNT_PROBES] = { .name = "probes" },
	[URDMA_CNT_ODP_WAITS] = { .name = "odp_waits" },
	[URDMA_CNT_ODP_FAULTS] = { .name = "odp_faults" },
};

static struct rdma_hw_stats *
urdma_alloc_hw_port_stats(struct ib_device *ibdev, u32 port)
{
	return rdma_alloc_hw_stats_struct(urdma_stat_descs, URDMA_NUM_COUNTERS,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int urdma_get_hw_stats(struct ib_device *ibdev,
			      struct rdma_hw_stats *stats, u32 port, int index)
{
	struct urdma_dev *udev = to_udev(ibdev);
	int i;

	for (i = 0; i < URDMA_NUM_COUNTERS; i++)
		stats->value[i] = urdma_engine_counter(udev, i);
	return URDMA_NUM_COUNTERS;
}

/* Undo what urdma_dev_create() set up, short of the ib_device itself. */
static void urdma_dev_release_resources(struct urdma_dev *udev)
{
	WARN_ON(!xa_empty(&udev->qps) || !xa_empty(&udev->ahs) ||
		!xa_empty(&udev->srqs));
	/* Nothing can find the device or its objects once this returns. */
	urdma_devtab_del(udev);
	urdma_net_stop(udev);
	urdma_engines_stop(udev);
	urdma_mcast_destroy(udev);
	mutex_destroy(&udev->mcast_mutex);
	xa_destroy(&udev->qps);
	xa_destroy(&udev->ahs);
	xa_destroy(&udev->srqs);
	urdma_keytab_destroy(&udev->keys);
	ida_destroy(&udev->cq_ida);
	ida_destroy(&udev->pd_ida);
	netdev_put(udev->ndev, &udev->ndev_tracker);
}

/*
 * Registration has set up the GID table and marked the device registered,
 * and no unregistration can start until it has returned: the moment other
 * urdma devices may find it (urdma_devtab_publish()).
 */
static int urdma_enable_driver(struct ib_device *ibdev)
{
	urdma_devtab_publish(to_udev(ibdev));
	return 0;
}

static void urdma_dealloc_driver(struct ib_device *ibdev)
{
	struct urdma_dev *udev = to_udev(ibdev);

	urdma_dev_release_resources(udev);
}

static const struct ib_device_ops urdma_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = URDMA_ABI_VERSION,

	.alloc_hw_port_stats = urdma_alloc_hw_port_stats,
	.alloc_mr = urdma_alloc_mr,
	.alloc_dm = urdma_alloc_dm,
	.alloc_mw = urdma_alloc_mw,
#if URDMA_HAVE_ODP
	.advise_mr = urdma_advise_mr,
#endif
	.alloc_pd = urdma_alloc_pd,
	.alloc_ucontext = urdma_alloc_ucontext,
	.alloc_xrcd = urdma_alloc_xrcd,
	.attach_mcast = urdma_attach_mcast,
	.create_ah = urdma_create_ah,
	.create_cq = urdma_create_cq,
	.create_qp = urdma_create_qp,
	.create_srq = urdma_create_srq,
	.create_user_ah = urdma_create_ah,
	.dealloc_driver = urdma_dealloc_driver,
	.dealloc_mw = urdma_dealloc_mw,
	.dealloc_pd = urdma_dealloc_pd,
	.dealloc_ucontext = urdma_dealloc_ucontext,
	.dealloc_xrcd = urdma_dealloc_xrcd,
	.dealloc_dm = urdma_dealloc_dm,
	.dereg_mr = urdma_dereg_mr,
	.destroy_ah = urdma_destroy_ah,
	.destroy_cq = urdma_destroy_cq,
	.destroy_qp = urdma_destroy_qp,
	.destroy_srq = urdma_destroy_srq,
	.detach_mcast = urdma_detach_mcast,
	.disassociate_ucontext = urdma_disassociate_ucontext,
	.enable_driver = urdma_enable_driver,
	.fill_res_mr_entry = urdma_fill_res_mr_entry,
	.fill_res_qp_entry = urdma_fill_res_qp_entry,
	.get_dev_fw_str = urdma_get_dev_fw_str,
	.get_dma_mr = urdma_get_dma_mr,
	.get_hw_stats = urdma_get_hw_stats,
	.get_link_layer = urdma_get_link_layer,
	.get_port_immutable = urdma_get_port_immutable,
	.map_mr_sg = urdma_map_mr_sg,
	.mmap = urdma_mmap,
	.mmap_free = urdma_mmap_free,
	.modify_qp = urdma_modify_qp,
	.modify_srq = urdma_modify_srq,
	.poll_cq = urdma_poll_cq,
	.post_recv = urdma_post_recv,
	.post_send = urdma_post_send,
	.post_srq_recv = urdma_post_srq_recv,
	.query_device = urdma_query_device,
	.query_pkey = urdma_query_pkey,
	.query_port = urdma_query_port,
	.query_qp = urdma_query_qp,
	.query_srq = urdma_query_srq,
	.reg_dm_mr = urdma_reg_dm_mr,
	.reg_user_mr = urdma_reg_user_mr,
	.reg_user_mr_dmabuf = urdma_reg_user_mr_dmabuf,
	.req_notify_cq = urdma_req_notify_cq,
	.rereg_user_mr = urdma_rereg_user_mr,
	.resize_cq = urdma_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, urdma_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, urdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, urdma_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, urdma_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_mw, urdma_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, urdma_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, urdma_ucontext, ibucontext),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, urdma_xrcd, ibxrcd),
};

static bool urdma_netdev_supported(const struct net_device *ndev)
{
	return ndev->type == ARPHRD_ETHER || ndev->type == ARPHRD_LOOPBACK;
}

/**
 * urdma_dev_create - allocate and set up a device bound to @ndev
 * @name: the ib_device name (may contain a %d pattern)
 * @ndev: the netdev; a reference is taken
 *
 * The device is not registered; see urdma_dev_register().  Undo with
 * urdma_dev_destroy() as long as registration has not succeeded.
 */
struct urdma_dev *urdma_dev_create(const char *name, struct net_device *ndev)
{
	struct urdma_dev *udev;
	struct ib_device *ibdev;
	int ret;

	if (!urdma_netdev_supported(ndev))
		return ERR_PTR(-EOPNOTSUPP);

	udev = ib_alloc_device(urdma_dev, ibdev);
	if (!udev)
		return ERR_PTR(-ENOMEM);

	ibdev = &udev->ibdev;
	udev->ndev = ndev;
	netdev_hold(ndev, &udev->ndev_tracker, GFP_KERNEL);
	ida_init(&udev->pd_ida);
	ida_init(&udev->cq_ida);
	xa_init_flags(&udev->srqs, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	urdma_keytab_init(&udev->keys);
	xa_init_flags(&udev->qps, XA_FLAGS_ALLOC | XA_FLAGS_LOCK_IRQ);
	xa_init_flags(&udev->ahs, XA_FLAGS_ALLOC1 | XA_FLAGS_LOCK_IRQ);
	mutex_init(&udev->mcast_mutex);
	spin_lock_init(&udev->mcast_lock);
	INIT_LIST_HEAD(&udev->mcast);
	ret = urdma_devtab_add(udev);	/* -EEXIST: @ndev has a device */
	if (ret)
		goto err_dealloc;

	/*
	 * The netdev's parent (its PCI or virtio device) is ours too, as for
	 * siw: clients that look for the NIC's bus and NUMA node under
	 * /sys/class/infiniband/<dev>/device (UCX, NCCL) find it there.  A
	 * virtual netdev (veth, lo) has none, and neither has the device.
	 */
	ibdev->dev.parent = ndev->dev.parent;
	ibdev->node_type = RDMA_NODE_IB_CA;
	ibdev->phys_port_cnt = 1;
	ibdev->num_comp_vectors = 1;
	ibdev->local_dma_lkey = 0;
	strscpy(ibdev->node_desc, "urdma", sizeof(ibdev->node_desc));
	addrconf_addr_eui48((unsigned char *)&ibdev->node_guid,
			    ndev->dev_addr);
	ib_set_device_ops(ibdev, &urdma_dev_ops);
	ibdev->driver_def = urdma_uapi_defs;
	/* Zero-WR posts are how user space kicks a sleeping engine. */
	ibdev->uverbs_cmd_mask |= BIT_ULL(IB_USER_VERBS_CMD_POST_SEND) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_RECV) |
				  BIT_ULL(IB_USER_VERBS_CMD_POST_SRQ_RECV);

	ret = ib_device_set_netdev(ibdev, ndev, 1);
	if (ret)
		goto err_dealloc;
	/*
	 * The threads are named after the device, or after the netdev if
	 * @name is a pattern: registration resolves that ("urdma%d").
	 */
	ret = urdma_engines_start(udev, strchr(name, '%') ?
					netdev_name(ndev) : name);
	if (ret)
		goto err_dealloc;
	urdma_net_start(udev);

	return udev;

err_dealloc:
	urdma_dev_destroy(udev);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_dev_create);

/**
 * urdma_dev_register - make the device visible to the RDMA core
 * @udev: from urdma_dev_create()
 * @name: the ib_device name
 *
 * On success the core owns the device: it is released through
 * ib_unregister_device*(), which ends in urdma_dealloc_driver().  Other
 * urdma devices (the local path, multicast) find it from
 * urdma_enable_driver() on.
 */
int urdma_dev_register(struct urdma_dev *udev, const char *name)
{
	return ib_register_device(&udev->ibdev, name, NULL);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_dev_register);

/**
 * urdma_dev_destroy - free a device that was never registered
 * @udev: from urdma_dev_create(); not on the device list
 */
void urdma_dev_destroy(struct urdma_dev *udev)
{
	urdma_dev_release_resources(udev);
	ib_dealloc_device(&udev->ibdev);
}
EXPORT_SYMBOL_IF_KUNIT(urdma_dev_destroy);
