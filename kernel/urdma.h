/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma: a software RoCEv2 RDMA adapter.  Core driver definitions.
 */
#ifndef URDMA_H
#define URDMA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/etherdevice.h>
#include <linux/netdevice.h>
#include <linux/idr.h>
#include <linux/iosys-map.h>
#include <rdma/ib_verbs.h>
#include <rdma/uverbs_ioctl.h>

#include "compat.h"
#include "engine.h"
#include "mr.h"
#include "net.h"
#include "wire.h"
#include "queue.h"

#define URDMA_LINK_TYPE		"urdma"

#define URDMA_MAX_STRIDE	(URDMA_MAX_WQE_BLOCKS * URDMA_WQE_BLOCK)

/*
 * Device limits.  query_device reports exactly these, and the verbs enforce
 * them.  Keep them here, in one place, so the two cannot drift apart.
 */
enum urdma_limits {
	URDMA_MAX_QP		= 16384,
	URDMA_MAX_QP_WR		= 16384,
	URDMA_MAX_SGE		= 16,
	URDMA_MAX_SGE_RD	= 16,
	URDMA_MAX_INLINE	= 256,
	URDMA_MAX_CQ		= 16384,
	URDMA_MAX_CQE		= 1 << 20,
	URDMA_MAX_MR		= 65536,
	URDMA_MAX_MW		= 65536,
	URDMA_MAX_PD		= 16384,
	URDMA_MAX_AH		= 16384,
	URDMA_MAX_SRQ		= 4096,
	URDMA_MAX_SRQ_WR	= 16384,
	URDMA_MAX_SRQ_SGE	= 16,
	URDMA_MAX_RD_ATOM	= 128,
	URDMA_MAX_PKEYS		= 1,
	URDMA_GID_TBL_LEN	= 128,
	URDMA_LOCAL_ACK_DELAY	= 15,
	URDMA_MAX_FAST_REG_PAGES = 512,
	URDMA_MAX_MCAST_GRP	= 256,
	URDMA_MAX_MCAST_QP_ATTACH = 16,
};

/*
 * A software device has no IEEE OUI; rdma-core's tests require a non-zero
 * vendor_id.  0x7572 is "ur".
 */
#define URDMA_VENDOR_ID		0x7572
#define URDMA_VENDOR_PART_ID	1

#define URDMA_MAX_SRQN		(BIT(24) - 1)	/* 24 bits, as in an XRCETH */
#define URDMA_MAX_MR_SIZE	BIT_ULL(40)
/* Device memory (dm.c): an allocation, and all of a device's together. */
#define URDMA_MAX_DM_SIZE	SZ_256K
#define URDMA_MAX_DM_TOTAL	SZ_16M
/* Pages a device's ODP MRs may follow (64 GiB of address space). */
#define URDMA_MAX_ODP_PAGES	(BIT_ULL(36) >> PAGE_SHIFT)
#define URDMA_MAX_MSG_SIZE	BIT(31)
#define URDMA_PAGE_SIZE_CAP	(SZ_4K | SZ_2M | SZ_1G)
#define URDMA_DEFAULT_PKEY	0xffff

/*
 * RoCEv2 overhead that the path MTU must leave room for: IPv6 (worst case),
 * UDP, BTH, the largest extension headers carried with payload (RETH +
 * ImmDt) and the ICRC (IBTA Annex A17).
 */
#define URDMA_ROCE_HDR_ROOM	(40 + 8 + 12 + 16 + 4 + 4)

/**
 * struct urdma_dev - one urdma RDMA device, bound to one netdev.
 * @ibdev:	the core's device; must be first (ib_alloc_device).
 * @ndev:	the bound netdev.  We hold a tracked reference from newlink
 *		until dealloc_driver, so it is valid for the device's life.
 * @registered:	ib_register_device() succeeded.  Protected by
 *		urdma_devs_lock.
 * @ndev_gone:	NETDEV_UNREGISTER arrived before @registered was set; the
 *		registering thread unregisters.  Protected by urdma_devs_lock.
 * @pd_ida:	PD numbers; the ida has its own lock.
 * @cq_ida:	CQ numbers.
 * @srqs:	SRQ number -> SRQ (1..URDMA_MAX_SRQN, cyclically from
 *		@next_srqn), for the XRC SRQ an XRC WQE or packet names; the
 *		xarray's lock, irq-safe.
 * @keys:	lkeys/rkeys of MRs and MWs.
 * @qps:	QP number -> QP; QPN 1 is the GSI QP, user QPs get 2..2^24-1
 *		cyclically (@next_qpn).  Its lock is the xarray's.
 * @ahs:	AH number -> AH, for UD WQEs; irq-safe lock, because kernel
 *		create_ah and destroy_ah may run in atomic context.
 * @nr_mr, @nr_cq, @nr_qp, @nr_srq, @nr_ah: objects in existence, checked
 *		against the URDMA_MAX_* limits.  Limits are device-wide and
 *		count kernel objects too (the MAD layer's GSI QP, CQ and PD).
 * @mr_gens:	the last MR generation handed out (struct urdma_mr @gen).
 * @qp_serials:	the last QP serial handed out (struct urdma_qp @serial),
 *		and SRQ serial (struct urdma_srq @serial).
 * @nr_mw:	memory windows in existence, checked against URDMA_MAX_MW.
 * @odp_faults:	ODP page faults resolved (URDMA_CNT_ODP_FAULTS).
 * @odp_pages:	pages ODP MRs follow (URDMA_MAX_ODP_PAGES, odp.c).
 * @dm_bytes:	device memory allocated (URDMA_MAX_DM_TOTAL).
 * @id:		module-wide device id (main.c's registry), 0 if none.
 * @engines:	@num_engines engine threads (@engines_alloc allocated).
 * @state_page:	the engines' state, mapped read-only into user contexts.
 */
struct urdma_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	bool registered;
	bool ndev_gone;
	struct ida pd_ida;
	struct ida cq_ida;
	struct xarray srqs;
	u32 next_srqn;
	struct urdma_keytab keys;
	struct xarray qps;
	u32 next_qpn;
	struct xarray ahs;
	u32 next_ahn;
	atomic_t nr_mr;
	atomic_t nr_cq;
	atomic_t nr_qp;
	atomic_t nr_srq;
	atomic_t nr_ah;
	atomic64_t mr_gens;
	atomic64_t qp_serials;
	atomic_t nr_mw;
	atomic64_t odp_faults;
	atomic64_t odp_pages;
	atomic64_t dm_bytes;
	u32 id;
	struct urdma_engine *engines;
	unsigned int num_engines;
	unsigned int engines_alloc;
	struct page *state_page;
	struct packet_type ptype[2];	/* receive: see net.c */
	bool net_started;
	bool rx_handler;		/* ... by the netdev's rx_handler */
	struct mutex mcast_mutex;	/* attach/detach, and the MAC filter */
	spinlock_t mcast_lock;		/* @mcast, for the engines */
	struct list_head mcast;
	u32 nmcast;
};

/**
 * struct urdma_ucontext - a user context
 * @mem_lock:	protects @ranges and the ->users of its doorbell pages.
 * @ranges:	pinned rings and doorbell pages (struct urdma_urange).
 * @state_entry: the mmap entry of the engine state page.
 */
/*
 * What a context's mmap offsets name: the engine state page (@dm_kva
 * NULL), or device memory (dm.c): @dm_npages pages, mapped in the kernel
 * at @dm_kva.
 */
struct urdma_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	void *dm_kva;
	struct page **dm_pages;
	u32 dm_npages;
};

void urdma_dm_free_pages(struct urdma_mmap_entry *e);

struct urdma_ucontext {
	struct ib_ucontext ibucontext;
	struct mutex mem_lock;		/* see above */
	struct rb_root_cached ranges;
	struct rdma_user_mmap_entry *state_entry;
};

struct urdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* An XRC domain: what XRC SRQs and XRC_TGT QPs must share. */
struct urdma_xrcd {
	struct ib_xrcd ibxrcd;
};

/**
 * struct urdma_cq - a completion queue
 * @cqn:	device-unique number.
 * @lock:	protects @ring, @prod and @kcons against the engine, resize
 *		and kernel polling.
 * @ring:	CQEs (struct urdma_cqe).
 * @db:		struct urdma_cq_db.
 * @prod:	CQEs written (the engine's index).
 * @kcons:	kernel CQs: CQEs polled.
 * @overflow:	a CQE was lost to a full ring (IB_EVENT_CQ_ERR was raised).
 */
struct urdma_cq {
	struct ib_cq ibcq;
	u32 cqn;
	spinlock_t lock;		/* see above */
	struct urdma_ring ring;
	struct urdma_db db;
	u32 prod;
	u32 kcons;
	bool overflow;
	s64 ts_offset;		/* the creator's time namespace, CLOCK_MONOTONIC */
};

/**
 * struct urdma_srq - a shared receive queue
 * @srqn:	device-unique number.
 * @lock:	protects @limit, kernel posting (@prod) and the engine's
 *		consumption (@cons).
 * @ring:	receive WQEs.
 * @db:		struct urdma_srq_db.
 * @max_sge:	SGEs a WQE may carry (from the stride).
 * @limit:	srq_limit; 0 when not armed.
 * @prod:	kernel SRQs: WQEs posted.
 * @pdn:	its PD's number: an XRC SRQ's checks the keys of what comes
 *		to it: an XRC_TGT QP has no PD.
 * @cq:		the CQ its receives complete to: an XRC SRQ's own, else
 *		NULL (the receiving QP's).
 * @xrcd:	an XRC SRQ's domain, else NULL.
 * @serial:	device-unique for its life, unlike its number, which comes
 *		round again: what a message under way remembers.
 */
struct urdma_srq {
	struct ib_srq ibsrq;
	u32 srqn;
	spinlock_t lock;		/* see above */
	struct urdma_ring ring;
	struct urdma_db db;
	u32 max_sge;
	u32 limit;
	u32 prod;
	u32 cons;
	u32 resizes;	/* under @lock: a new ring (receive WQEs, recv.c) */
	u32 pdn;
	struct urdma_cq *cq;
	struct ib_xrcd *xrcd;
	u64 serial;
};

/**
 * struct urdma_av - an address vector (RoCEv2), from an AH or a QP's path
 * @net_type:	enum rdma_network_type of the source GID.
 * @peer:	the id of the urdma device of this host that owns @dgid (the
 *		local path), 0 if none.
 */
struct urdma_av {
	union ib_gid dgid;
	union ib_gid sgid;
	u32 flow_label;
	u8 sgid_index;
	u8 hop_limit;
	u8 traffic_class;
	u8 sl;
	u8 net_type;
	u8 dmac[ETH_ALEN];
	u32 peer;
};

/**
 * struct urdma_ah - an address handle
 * @ahn:	its number, which UD send WQEs name.
 * @pdn:	its PD: only a QP of that PD may send with it.
 * @av:		the address vector.
 */
struct urdma_ah {
	struct ib_ah ibah;
	u32 ahn;
	u32 pdn;
	struct urdma_av av;
};

/**
 * struct urdma_qp - a queue pair
 * @state_lock:	serializes modify and query; protects @attr and @av.
 * @attr:	current attributes; attr.qp_state is the state.
 * @av:		the primary path (RC, UC), set with IB_QP_AV.
 * @av_valid:	@av was set.
 * @sq_sig_all:	every send WQE completes (IB_SIGNAL_ALL_WR).
 * @cap:	capacities of the rings.
 * @sq, @rq:	send and receive rings (@rq unused with an SRQ).
 * @db:		struct urdma_qp_db.
 * @sq_lock:	kernel QPs: serializes posting (@sq_prod).
 * @rq_lock:	serializes kernel posting (@rq_prod) and consumption of the
 *		RQ by any engine thread (@rq_cons).
 * @sq_prod, @rq_prod: kernel QPs: WQEs posted.
 * @eng:	the engine thread that runs the SQ and flushes in ERROR.
 * @eng_node:	in @eng's QP list.
 * @sq_cons:	SQ WQEs retired; @eng's thread only, like the fields below.
 * @rq_cons:	RQ WQEs consumed; under @rq_lock.
 * @waiting:	the head WQE waits for @wait_until (RNR or retry timer).
 * @tries_set:	@rnr_left and @retry_left are counting for the head WQE.
 * @err_counted: @eng's err_qps counts this QP; under @eng's err_lock
 *		(urdma_engine_count_err()).
 * @serial:	device-unique for the QP's life, unlike its number, which
 *		is reused: what the local path and type 2 windows remember.
 * @xrcd:	XRC_TGT: its domain; the XRC SRQs of it take its messages.
 * @peer_serial: RC/UC on the local path: the serial of the requester QP
 *		it accepts, learnt at RTR or from the first request (0: none
 *		yet; see urdma_conn_accepts()).  Cleared at RESET.
 *
 * attr.qp_state is written under @state_lock by modify_qp and, to move the
 * QP to ERROR, by the engine (xchg); modify_qp changes it with cmpxchg.
 */
struct urdma_qp {
	struct ib_qp ibqp;
	struct mutex state_lock;	/* see above */
	struct ib_qp_attr attr;
	struct urdma_av av;
	bool av_valid;
	bool sq_sig_all;
	struct ib_qp_cap cap;
	struct urdma_ring sq;
	struct urdma_ring rq;
	struct urdma_db db;
	spinlock_t sq_lock;		/* see above */
	spinlock_t rq_lock;		/* see above */
	u32 sq_prod;
	u32 rq_prod;
	struct urdma_engine *eng;
	struct list_head eng_node;
	u32 sq_cons;
	u32 rq_cons;
	ktime_t wait_until;
	bool waiting;
	bool tries_set;
	u8 rnr_left;
	u8 retry_left;
	u32 req_psn;
	struct urdma_wire *wire;
	bool use_wire;
	bool err_counted;
	bool last_wqe_told;	/* engine: IB_EVENT_QP_LAST_WQE_REACHED raised */
	u64 serial;
	u64 peer_serial;
	struct ib_xrcd *xrcd;
};

/**
 * struct urdma_mr - a memory region
 * @ibmr:	the core's MR (driver-allocated).
 * @mem:	key, type, PD and access; what the key table points to.
 * @umem:	pinned user memory (URDMA_MEM_USER), else NULL.
 * @mtt:	translation (USER, FRMR); unused for DMA MRs.
 * @max_pages:	capacity of @mtt.pas for FRMR.
 * @gen:	its generation: new at registration and at every
 *		re-registration, so that the windows bound to it stop
 *		working (urdma_mw_mr()).  Written while @mem is invalid.
 */
struct urdma_mr {
	struct ib_mr ibmr;
	struct urdma_mem mem;
	struct ib_umem *umem;
	struct dma_buf *dmabuf;
	struct dma_buf_attachment *dmabuf_attach;
	struct iosys_map dmabuf_map;
	struct urdma_mtt mtt;
	struct urdma_odp *odp;
	u32 max_pages;
	u64 gen;
};

/**
 * struct urdma_mw_binding - what BIND_MW sets in a window, but its key and
 *		rights (which are in its struct urdma_mem)
 * @mr_key:	the key of the MR it is bound to; looked up on each access,
 *		so a deregistered MR simply stops matching.
 * @mr_gen:	that MR's generation at the bind: a re-registered MR stops
 *		matching too.
 * @addr, @length: the bound range.
 * @qpn, @qp_serial: type 2: the QP it was bound through; only that QP may
 *		use it, or invalidate it with a SEND_WITH_INV it receives (the
 *		serial: not a later QP that got the same number).
 */
struct urdma_mw_binding {
	u32 mr_key;
	u64 mr_gen;
	u64 addr;
	u64 length;
	u32 qpn;
	u64 qp_serial;
};

/**
 * struct urdma_mw - a memory window
 * @mem:	key, PD, access and state (VALID while bound).
 * @seq:	odd while a bind changes the window; readers take a
 *		consistent view of it (urdma_mw_view()).
 * @b:		what the bind set (struct urdma_mw_binding).
 */
struct urdma_mw {
	struct ib_mw ibmw;
	struct urdma_mem mem;
	u32 seq;
	struct urdma_mw_binding b;
};

/* A window as one access sees it: a consistent copy (urdma_mw_view()). */
struct urdma_mw_view {
	int access;
	struct urdma_mw_binding b;
};

/*
 * The engine that serves QP @qpn of a device: QP creation assigns it, and
 * the receive handler queues the QP's packets to it without a lookup.
 */
static inline struct urdma_engine *urdma_qpn_engine(struct urdma_dev *udev,
						    u32 qpn)
{
	return &udev->engines[qpn % udev->num_engines];
}

static inline struct urdma_mr *to_umr(struct ib_mr *ibmr)
{
	return container_of(ibmr, struct urdma_mr, ibmr);
}

static inline struct urdma_mw *to_umw(struct ib_mw *ibmw)
{
	return container_of(ibmw, struct urdma_mw, ibmw);
}

static inline struct urdma_dev *to_udev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct urdma_dev, ibdev);
}

static inline struct urdma_pd *to_upd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct urdma_pd, ibpd);
}

static inline struct urdma_ucontext *to_uctx(struct ib_ucontext *ibuctx)
{
	return container_of(ibuctx, struct urdma_ucontext, ibucontext);
}

static inline struct urdma_cq *to_ucq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct urdma_cq, ibcq);
}

static inline struct urdma_qp *to_uqp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct urdma_qp, ibqp);
}

/* UD and the GSI QP (a UD QP with QPN 1) */
static inline bool urdma_is_ud(const struct urdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_UD || qp->ibqp.qp_type == IB_QPT_GSI;
}

/* Connected QPs whose requester retries and waits out RNR: RC and XRC. */
static inline bool urdma_is_reliable(const struct urdma_qp *qp)
{
	return qp->ibqp.qp_type == IB_QPT_RC ||
	       qp->ibqp.qp_type == IB_QPT_XRC_INI ||
	       qp->ibqp.qp_type == IB_QPT_XRC_TGT;
}

static inline struct urdma_srq *to_usrq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct urdma_srq, ibsrq);
}

static inline struct urdma_ah *to_uah(struct ib_ah *ibah)
{
	return container_of(ibah, struct urdma_ah, ibah);
}

/* The user context of a verb's udata, NULL for kernel callers. */
static inline struct urdma_ucontext *urdma_udata_uctx(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct urdma_ucontext,
					 ibucontext);
}

#define urdma_dbg_dev(udev, fmt, ...) \
	ibdev_dbg(&(udev)->ibdev, "%s: " fmt, __func__, ##__VA_ARGS__)

/* device.c */
struct urdma_port_state {
	enum ib_port_state state;
	enum ib_port_phys_state phys_state;
};

enum ib_mtu urdma_mtu_from_netdev(unsigned int ndev_mtu);
struct urdma_port_state urdma_port_state_from_netdev(bool running,
						     bool carrier);
void urdma_fill_device_attr(struct ib_device_attr *attr);
struct urdma_dev *urdma_dev_create(const char *name, struct net_device *ndev);
int urdma_dev_register(struct urdma_dev *udev, const char *name);
void urdma_dev_destroy(struct urdma_dev *udev);

/* verbs_ctx.c: the engine state page */
int urdma_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma);
void urdma_mmap_free(struct rdma_user_mmap_entry *entry);

/* main.c: the device registry, a stable id per device */
int urdma_devtab_add(struct urdma_dev *udev);
void urdma_devtab_publish(struct urdma_dev *udev);
void urdma_devtab_del(struct urdma_dev *udev);
struct urdma_dev *urdma_devtab_get(u32 id);
u32 urdma_devtab_find_gid(const union ib_gid *gid, const struct net *net);
struct urdma_dev *urdma_devtab_next(unsigned long *id);

/* udata.c */
int urdma_udata_get_cmd(struct ib_udata *udata, void *cmd, size_t size,
			size_t min_size);
int urdma_udata_no_cmd(struct ib_udata *udata);
int urdma_udata_put_resp(struct ib_udata *udata, void *resp,
			 size_t size);

/* verbs_ctx.c */
int urdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata);
void urdma_dealloc_ucontext(struct ib_ucontext *ibuctx);
void urdma_disassociate_ucontext(struct ib_ucontext *ibuctx);
int urdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int urdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int urdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);
int urdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata);

/* mr.c */
int urdma_check_access(int access);
bool urdma_mem_grants(const struct urdma_mem *mem, int access);
bool urdma_mw_view(const struct urdma_mw *mw, u32 rkey,
		   struct urdma_mw_view *v);
bool urdma_mw_bind_begin(struct urdma_mw *mw);
void urdma_mw_bind_end(struct urdma_mw *mw);
struct urdma_mr *urdma_mw_mr(struct urdma_dev *udev,
			     const struct urdma_mw *mw,
			     const struct urdma_mw_view *v, int access);
struct ib_mr *urdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
struct ib_mr *urdma_reg_user_mr_dmabuf(struct ib_pd *ibpd, u64 offset,
				       u64 length, u64 iova, int fd, int access,
				       urdma_dmabuf_mr_attrs_t *attrs);
struct ib_mr *urdma_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				  u64 length, u64 iova, int access,
				  struct ib_pd *ibpd, struct ib_udata *udata);
int urdma_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata);
struct ib_mr *urdma_get_dma_mr(struct ib_pd *ibpd, int access);
struct ib_mr *urdma_alloc_mr(struct ib_pd *ibpd, enum ib_mr_type type,
			     u32 max_num_sg);
int urdma_map_mr_sg(struct ib_mr *ibmr, struct scatterlist *sg, int sg_nents,
		    unsigned int *sg_offset);
int urdma_fill_res_mr_entry(struct sk_buff *msg, struct ib_mr *ibmr);
int urdma_fill_res_qp_entry(struct sk_buff *msg, struct ib_qp *ibqp);
int urdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int urdma_dealloc_mw(struct ib_mw *ibmw);
struct ib_mr *urdma_reg_kva_mr(struct ib_pd *ibpd, u32 type, int access,
			       u64 kaddr, u64 length);

/* dm.c */
struct ib_dm *urdma_alloc_dm(struct ib_device *ibdev,
			     struct ib_ucontext *ibuctx,
			     struct ib_dm_alloc_attr *attr,
			     struct uverbs_attr_bundle *attrs);
int urdma_dealloc_dm(struct ib_dm *ibdm, struct uverbs_attr_bundle *attrs);
struct ib_mr *urdma_reg_dm_mr(struct ib_pd *ibpd, struct ib_dm *ibdm,
			      struct ib_dm_mr_attr *attr,
			      struct uverbs_attr_bundle *attrs);
extern const struct uapi_definition urdma_uapi_defs[];

/* odp.c */
#if URDMA_HAVE_ODP
int urdma_odp_reg(struct urdma_mr *mr, struct ib_device *ibdev, u64 start,
		  u64 length, u64 iova);
void urdma_odp_release(struct urdma_odp *odp);
int urdma_odp_ready(struct urdma_mr *mr, u64 va, u64 len, bool write);
void *urdma_odp_kva(struct urdma_mr *mr, u64 va, u32 want, u32 *contig);
int urdma_advise_mr(struct ib_pd *ibpd, enum ib_uverbs_advise_mr_advice advice,
		    u32 flags, struct ib_sge *sg_list, u32 num_sge,
		    struct uverbs_attr_bundle *attrs);
void urdma_odp_caps(struct ib_device_attr *attr);
int urdma_odp_init(void);
void urdma_odp_exit(void);
#else
static inline int urdma_odp_init(void)
{
	return 0;
}

static inline void urdma_odp_exit(void) {}

static inline int urdma_odp_reg(struct urdma_mr *mr, struct ib_device *ibdev,
				u64 start, u64 length, u64 iova)
{
	return -EOPNOTSUPP;
}

static inline void urdma_odp_release(struct urdma_odp *odp) {}

static inline int urdma_odp_ready(struct urdma_mr *mr, u64 va, u64 len,
				  bool write)
{
	return -EFAULT;
}

static inline void *urdma_odp_kva(struct urdma_mr *mr, u64 va, u32 want,
				  u32 *contig)
{
	return NULL;
}

static inline void urdma_odp_caps(struct ib_device_attr *attr) {}
#endif

/* cq.c */
int urdma_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
		    urdma_create_cq_attrs_t *attrs);
int urdma_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata);
int urdma_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata);
int urdma_poll_cq(struct ib_cq *ibcq, int num_entries, struct ib_wc *wc);
int urdma_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags);
int urdma_cqe_to_wc_opcode(u8 opcode);

/* qp.c */
int urdma_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
		    struct ib_udata *udata);
int urdma_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		    struct ib_udata *udata);
int urdma_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		   struct ib_qp_init_attr *init);
int urdma_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata);
int urdma_qp_check_attr(const struct ib_qp_attr *attr, int mask);
u32 urdma_send_stride(u32 max_sge, u32 max_inline);
u32 urdma_recv_stride(u32 max_sge);
bool urdma_stride_ok(u32 stride, u32 min_stride);
u32 urdma_recv_stride_sges(u32 stride);

/* post.c */
int urdma_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
		    const struct ib_send_wr **bad_wr);
int urdma_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
		    const struct ib_recv_wr **bad_wr);
int urdma_post_recv_ring(struct urdma_ring *ring, u32 *prod, u32 *db_prod,
			 const u32 *db_cons, u32 max_sge,
			 const struct ib_recv_wr *wr,
			 const struct ib_recv_wr **bad_wr);

/* srq.c */
int urdma_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
		     struct ib_udata *udata);
int urdma_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
		     enum ib_srq_attr_mask mask, struct ib_udata *udata);
int urdma_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr);
int urdma_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata);
int urdma_post_srq_recv(struct ib_srq *ibsrq, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad_wr);
struct urdma_srq *urdma_xrc_srq(struct urdma_dev *udev, u32 srqn,
				const struct ib_xrcd *xrcd);

/* mcast.c */
int urdma_attach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
int urdma_detach_mcast(struct ib_qp *ibqp, union ib_gid *gid, u16 lid);
void urdma_mcast_qp_gone(struct urdma_qp *qp);
void urdma_mcast_destroy(struct urdma_dev *udev);
bool urdma_gid_is_mcast(const union ib_gid *gid);

/* ah.c */
int urdma_av_from_attr(struct urdma_av *av, const struct rdma_ah_attr *attr);
int urdma_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
		    struct ib_udata *udata);
int urdma_destroy_ah(struct ib_ah *ibah, u32 flags);

#endif /* URDMA_H */
