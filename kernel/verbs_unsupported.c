// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The core requires these ops of every device (ib_device_check_mandatory).
 * Their objects (CQ, QP) arrive with the verbs-objects work; until then
 * they fail cleanly with -EOPNOTSUPP and create nothing.
 */
#include "urdma.h"

static int urdma_create_cq_unsupported(struct ib_cq *ibcq,
				       const struct ib_cq_init_attr *attr,
				       urdma_create_cq_attrs_t *attrs)
{
	return -EOPNOTSUPP;
}

static int urdma_destroy_cq_unsupported(struct ib_cq *ibcq,
					struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int urdma_poll_cq_unsupported(struct ib_cq *ibcq, int num_entries,
				     struct ib_wc *wc)
{
	return -EOPNOTSUPP;
}

static int urdma_req_notify_cq_unsupported(struct ib_cq *ibcq,
					   enum ib_cq_notify_flags flags)
{
	return -EOPNOTSUPP;
}

static int urdma_create_qp_unsupported(struct ib_qp *ibqp,
				       struct ib_qp_init_attr *init_attr,
				       struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int urdma_modify_qp_unsupported(struct ib_qp *ibqp,
				       struct ib_qp_attr *attr, int mask,
				       struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int urdma_destroy_qp_unsupported(struct ib_qp *ibqp,
					struct ib_udata *udata)
{
	return -EOPNOTSUPP;
}

static int urdma_post_send_unsupported(struct ib_qp *ibqp,
				       const struct ib_send_wr *wr,
				       const struct ib_send_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

static int urdma_post_recv_unsupported(struct ib_qp *ibqp,
				       const struct ib_recv_wr *wr,
				       const struct ib_recv_wr **bad_wr)
{
	*bad_wr = wr;
	return -EOPNOTSUPP;
}

const struct ib_device_ops urdma_unsupported_ops = {
	.create_cq = urdma_create_cq_unsupported,
	.create_qp = urdma_create_qp_unsupported,
	.destroy_cq = urdma_destroy_cq_unsupported,
	.destroy_qp = urdma_destroy_qp_unsupported,
	.modify_qp = urdma_modify_qp_unsupported,
	.poll_cq = urdma_poll_cq_unsupported,
	.post_recv = urdma_post_recv_unsupported,
	.post_send = urdma_post_send_unsupported,
	.req_notify_cq = urdma_req_notify_cq_unsupported,

	/* The core allocates objects before calling create; size them. */
	INIT_RDMA_OBJ_SIZE(ib_cq, urdma_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_qp, urdma_qp, ibqp),
};
