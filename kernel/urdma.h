/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * urdma: a software RoCEv2 RDMA adapter.  Core driver definitions.
 */
#ifndef URDMA_H
#define URDMA_H

#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/netdevice.h>
#include <linux/idr.h>
#include <rdma/ib_verbs.h>

#include "compat.h"
#include "mr.h"

#define URDMA_DRV_NAME		"urdma"
#define URDMA_LINK_TYPE		"urdma"

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
	URDMA_MAX_CQE		= 65536,
	URDMA_MAX_MR		= 65536,
	URDMA_MAX_PD		= 16384,
	URDMA_MAX_AH		= 65536,
	URDMA_MAX_SRQ		= 4096,
	URDMA_MAX_SRQ_WR	= 16384,
	URDMA_MAX_SRQ_SGE	= 16,
	URDMA_MAX_RD_ATOM	= 16,
	URDMA_MAX_MCAST_GRP	= 8192,
	URDMA_MAX_MCAST_QP	= 56,
	URDMA_MAX_PKEYS		= 1,
	URDMA_GID_TBL_LEN	= 128,
	URDMA_LOCAL_ACK_DELAY	= 15,
	URDMA_MAX_FAST_REG_PAGES = 512,
};

#define URDMA_MAX_MR_SIZE	BIT_ULL(40)
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
 * @list:	entry in the module's device list (urdma_devs, main.c),
 *		protected by urdma_devs_lock.
 * @registered:	ib_register_device() succeeded.  Protected by
 *		urdma_devs_lock.
 * @ndev_gone:	NETDEV_UNREGISTER arrived before @registered was set; the
 *		registering thread unregisters.  Protected by urdma_devs_lock.
 * @pd_ida:	PD numbers; the ida has its own lock.
 * @keys:	lkeys/rkeys of MRs and MWs.
 * @nr_mr:	MRs in existence, checked against URDMA_MAX_MR.
 */
struct urdma_dev {
	struct ib_device ibdev;
	struct net_device *ndev;
	netdevice_tracker ndev_tracker;
	struct list_head list;
	bool registered;
	bool ndev_gone;
	struct ida pd_ida;
	struct urdma_keytab keys;
	atomic_t nr_mr;
};

struct urdma_ucontext {
	struct ib_ucontext ibucontext;
};

struct urdma_pd {
	struct ib_pd ibpd;
	u32 pdn;
};

/* Placeholders until the verbs-objects work gives them state. */
struct urdma_cq {
	struct ib_cq ibcq;
};

struct urdma_qp {
	struct ib_qp ibqp;
};

/**
 * struct urdma_mr - a memory region
 * @ibmr:	the core's MR (driver-allocated).
 * @mem:	key, type, PD and access; what the key table points to.
 * @umem:	pinned user memory (URDMA_MEM_USER), else NULL.
 * @mtt:	translation (USER, FRMR); unused for DMA MRs.
 * @max_pages:	capacity of @mtt.pas for FRMR.
 */
struct urdma_mr {
	struct ib_mr ibmr;
	struct urdma_mem mem;
	struct ib_umem *umem;
	struct urdma_mtt mtt;
	u32 max_pages;
};

struct urdma_mw {
	struct ib_mw ibmw;
	struct urdma_mem mem;
};

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

#define urdma_dbg_dev(udev, fmt, ...) \
	ibdev_dbg(&(udev)->ibdev, "%s: " fmt, __func__, ##__VA_ARGS__)
#define urdma_err_dev(udev, fmt, ...) \
	ibdev_err_ratelimited(&(udev)->ibdev, "%s: " fmt, __func__, \
			      ##__VA_ARGS__)

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
int urdma_query_device(struct ib_device *ibdev, struct ib_device_attr *attr,
		       struct ib_udata *udata);
int urdma_query_port(struct ib_device *ibdev, u32 port,
		     struct ib_port_attr *attr);
int urdma_get_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *immutable);
int urdma_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
		     u16 *pkey);
void urdma_get_dev_fw_str(struct ib_device *ibdev, char *str);

/* main.c */
void urdma_dev_list_del(struct urdma_dev *udev);

/* udata.c */
int urdma_udata_get_cmd(struct ib_udata *udata, void *cmd, size_t size,
			size_t min_size);
int urdma_udata_no_cmd(struct ib_udata *udata);
int urdma_udata_put_resp(struct ib_udata *udata, void *resp,
			 size_t size);

/* verbs_ctx.c */
int urdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata);
void urdma_dealloc_ucontext(struct ib_ucontext *ibuctx);
int urdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);
int urdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata);

/* mr.c */
int urdma_check_access(int access);
struct ib_mr *urdma_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				u64 iova, int access, struct ib_udata *udata);
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
int urdma_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata);
int urdma_dealloc_mw(struct ib_mw *ibmw);

/* verbs_unsupported.c: mandatory ops whose objects arrive with the engine */
extern const struct ib_device_ops urdma_unsupported_ops;

#endif /* URDMA_H */
