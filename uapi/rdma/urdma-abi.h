/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * urdma user/kernel ABI.
 *
 * Rules (after efa-abi.h):
 *  - Every struct is a multiple of 8 bytes, fixed-width types only, and
 *    padding is explicit.
 *  - Reserved fields are named reserved_XXX, where XXX is the hex bit offset
 *    of the field inside its struct.  They must be zero; the kernel rejects
 *    non-zero reserved fields and unknown comp_mask bits with -EINVAL.
 *  - Structs start with comp_mask so that they can grow at the end.  The
 *    kernel accepts a shorter (older) command as long as it covers the last
 *    mandatory field, and a longer (newer) one only if the unknown tail is
 *    zero.
 *  - No kernel pointers, no #ifdef __KERNEL__.
 *
 * URDMA_ABI_VERSION is the device's uverbs_abi_ver; the provider refuses
 * other versions.
 */
#ifndef URDMA_ABI_USER_H
#define URDMA_ABI_USER_H

#include <linux/types.h>

#define URDMA_ABI_VERSION 1

#ifdef __cplusplus
#define URDMA_ABI_ASSERT_SIZE(name, size) \
	static_assert(sizeof(struct name) == (size), #name " size")
#else
#define URDMA_ABI_ASSERT_SIZE(name, size) \
	_Static_assert(sizeof(struct name) == (size), #name " size")
#endif

/* Bits of urdma_alloc_ucontext_resp.device_caps. */
enum {
	/* Local path: both QPs on this host move data by memcpy. */
	URDMA_DEVICE_CAP_LOCAL_PATH = 1 << 0,
	/* urdma_engine_state.err_qps is kept (receive-kick elision). */
	URDMA_DEVICE_CAP_ERR_QPS = 1 << 1,
};

/*
 * Device memory (ibv_alloc_dm): the driver attribute of the DM_ALLOC method
 * that gives the mmap offset of the memory (UVERBS_ID_NS_SHIFT is 12: the
 * first id of the driver's namespace).
 */
enum {
	URDMA_ATTR_ALLOC_DM_MMAP_OFFSET = 1U << 12,	/* __u64, out */
};

struct urdma_alloc_ucontext_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 reserved_20;
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_ucontext_cmd, 8);

struct urdma_alloc_ucontext_resp {
	__u32 comp_mask;
	__u32 device_caps;	/* URDMA_DEVICE_CAP_* */
	__u32 max_qp_wr;	/* limits the kernel enforces on user queues */
	__u32 max_sge;
	__u32 max_inline_data;
	__u32 max_cqe;
	__u32 max_srq_wr;
	__u32 page_shift;	/* ring and doorbell alignment (log2 bytes) */
	__u32 num_engines;	/* engine threads; entries in the state page */
	__u32 reserved_120;
	__u64 engine_mmap_offset; /* mmap offset of the engine state page */
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_ucontext_resp, 48);

/*
 * The engine state page: URDMA_ENGINE_PAGE_SIZE bytes that the provider
 * maps read-only (PROT_READ, MAP_SHARED) from the command fd at
 * engine_mmap_offset.  Entry i describes engine thread i.
 *
 * Doorbell elision (after siw): the provider writes its WQEs, then the
 * producer index of the doorbell record, then issues a full memory
 * barrier and reads the asleep flag of its QP's engine.  Only if it is set
 * does it "kick": a POST_SEND (or POST_RECV) command with zero work
 * requests on the QP, which wakes the engine.  The engine, before it
 * sleeps, sets asleep, issues a full barrier and polls every doorbell
 * once more, so that no posted WQE is left behind.
 *
 * Receive-kick elision (URDMA_DEVICE_CAP_ERR_QPS): the engine needs a
 * kick for a receive only to flush it, in a QP in ERROR; a sender's engine
 * reads the RQ's producer index when a message arrives.  err_qps counts
 * the engine's QPs in ERROR, including those the engine moved there on its
 * own.  The kernel raises it, then issues a full barrier before the engine
 * next looks at those QPs' receive queues; the provider, after its full
 * barrier, kicks for a receive only if the engine sleeps and err_qps is
 * not 0.
 */
#define URDMA_ENGINE_PAGE_SIZE	4096
#define URDMA_MAX_ENGINES	(URDMA_ENGINE_PAGE_SIZE / 64)

struct urdma_engine_state {
	__u32 asleep;		/* engine: 1 while the thread sleeps */
	__u32 err_qps;		/* engine: its QPs in ERROR */
	__u64 reserved_40[7];	/* one cache line per engine */
};

URDMA_ABI_ASSERT_SIZE(urdma_engine_state, 64);

struct urdma_alloc_pd_resp {
	__u32 comp_mask;
	__u32 pdn;		/* device-unique PD number */
};

URDMA_ABI_ASSERT_SIZE(urdma_alloc_pd_resp, 8);

/*
 * Queues.
 *
 * Every ring (SQ, RQ, SRQ, CQ) is user memory that the provider allocates
 * page-aligned and passes by address; the kernel pins it and maps it for
 * the engine.  Rings hold a power-of-two number of entries.  Kernel QPs and
 * CQs use kernel memory in the same formats.
 *
 * Each queue also has a doorbell record: URDMA_DB_SIZE bytes, aligned to
 * URDMA_DB_SIZE, in memory the provider owns (usually a shared page of
 * records).  Fields marked "user" are written by the provider and read by
 * the engine; fields marked "engine" are written by the engine.  The
 * engine keeps its own copy of every index and treats the user-written
 * ones as untrusted requests.
 */
#define URDMA_DB_SIZE		16
#define URDMA_WQE_BLOCK		64	/* WQEs are built of 64-byte blocks */
#define URDMA_SGE_SIZE		16
#define URDMA_CQE_SIZE		32
#define URDMA_MAX_WQE_BLOCKS	5	/* 64-byte header + 256 bytes of SGEs */

/* A QP's doorbell record.  Indices are free-running modulo 2^32. */
struct urdma_qp_db {
	__u32 sq_prod;		/* user: WQEs posted to the SQ */
	__u32 rq_prod;		/* user: WQEs posted to the RQ */
	__u32 sq_cons;		/* engine: SQ WQEs retired (slots reusable) */
	__u32 rq_cons;		/* engine: RQ WQEs consumed (slots reusable) */
};

URDMA_ABI_ASSERT_SIZE(urdma_qp_db, URDMA_DB_SIZE);

struct urdma_srq_db {
	__u32 prod;		/* user: WQEs posted */
	__u32 cons;		/* engine: WQEs consumed (slots reusable) */
	__u32 reserved_40;
	__u32 reserved_60;
};

URDMA_ABI_ASSERT_SIZE(urdma_srq_db, URDMA_DB_SIZE);

/* Bits of urdma_cq_db.arm. */
enum {
	URDMA_CQ_ARM_NEXT = 1 << 0,	/* event on the next completion */
	URDMA_CQ_ARM_SOLICITED = 1 << 1, /* ... on the next solicited one */
	URDMA_CQ_ARM_SN_SHIFT = 2,	/* bits 31:2 count arm requests */
};

struct urdma_cq_db {
	__u32 cons;		/* user: CQEs consumed */
	__u32 arm;		/* user sets, engine clears: URDMA_CQ_ARM_* */
	__u32 reserved_40;
	__u32 reserved_60;
};

URDMA_ABI_ASSERT_SIZE(urdma_cq_db, URDMA_DB_SIZE);

/* A scatter/gather element. */
struct urdma_sge {
	__u64 addr;
	__u32 length;
	__u32 lkey;
};

URDMA_ABI_ASSERT_SIZE(urdma_sge, URDMA_SGE_SIZE);

/* urdma_send_wqe.opcode */
enum urdma_wqe_opcode {
	URDMA_WQE_RDMA_WRITE = 0,
	URDMA_WQE_RDMA_WRITE_IMM = 1,
	URDMA_WQE_SEND = 2,
	URDMA_WQE_SEND_IMM = 3,
	URDMA_WQE_RDMA_READ = 4,
	URDMA_WQE_ATOMIC_CMP_SWP = 5,
	URDMA_WQE_ATOMIC_FETCH_ADD = 6,
	URDMA_WQE_LOCAL_INV = 7,
	URDMA_WQE_BIND_MW = 8,
	URDMA_WQE_SEND_INV = 9,
	URDMA_WQE_ATOMIC_WRITE = 10,
	URDMA_WQE_FLUSH = 11,
	URDMA_WQE_REG_MR = 12,		/* kernel QPs only */
	URDMA_WQE_NUM_OPCODES
};

/* urdma_send_wqe.flags */
enum {
	URDMA_WQE_SIGNALED = 1 << 0,
	URDMA_WQE_SOLICITED = 1 << 1,
	URDMA_WQE_FENCE = 1 << 2,
	URDMA_WQE_INLINE = 1 << 3,	/* data follows the header */
};

struct urdma_wqe_rdma {
	__u64 remote_addr;
	__u32 rkey;
	__u32 reserved_60;
	__u64 reserved_80;
	__u64 reserved_c0;
};

/* Atomics; ATOMIC_WRITE carries its 8 bytes in compare_add. */
struct urdma_wqe_atomic {
	__u64 remote_addr;
	__u32 rkey;
	__u32 reserved_60;
	__u64 compare_add;
	__u64 swap;
};

/* urdma_wqe_flush.type and .level: the values of enum ibv_flush_*. */
enum {
	URDMA_FLUSH_GLOBAL = 1,
	URDMA_FLUSH_PERSISTENT = 2,
	URDMA_FLUSH_RANGE = 0,
	URDMA_FLUSH_MR = 1,
};

struct urdma_wqe_flush {
	__u64 remote_addr;
	__u32 rkey;
	__u8 type;		/* URDMA_FLUSH_GLOBAL / _PERSISTENT */
	__u8 level;		/* URDMA_FLUSH_RANGE / _MR */
	__u16 reserved_70;
	__u64 length;
	__u64 reserved_c0;
};

struct urdma_wqe_ud {
	__u32 remote_qpn;
	__u32 remote_qkey;
	__u32 ah_num;		/* from urdma_create_ah_resp */
	__u32 reserved_60;
	__u64 reserved_80;
	__u64 reserved_c0;
};

struct urdma_wqe_bind {
	__u64 addr;
	__u64 length;
	__u32 mr_lkey;
	__u32 new_rkey;		/* the window's rkey after the bind */
	__u32 access;		/* IB_ACCESS_* */
	__u32 reserved_e0;
};

/* Kernel fast registration (IB_WR_REG_MR). */
struct urdma_wqe_reg {
	__u64 iova;
	__u64 length;
	__u32 mr_key;		/* the MR's current key */
	__u32 new_key;		/* its key after registration */
	__u32 access;
	__u32 reserved_e0;
};

/*
 * A send WQE: this 64-byte header, then num_sge urdma_sge entries or,
 * with URDMA_WQE_INLINE, inline_len bytes of data.  The WQE occupies the
 * queue's stride (sq_stride bytes, a multiple of URDMA_WQE_BLOCK).
 */
struct urdma_send_wqe {
	__u64 wr_id;
	__u8 opcode;		/* enum urdma_wqe_opcode */
	__u8 flags;		/* URDMA_WQE_* */
	__u8 num_sge;
	__u8 reserved_58;
	__u32 ex;		/* imm_data (big endian) or invalidate rkey */
	union {
		struct urdma_wqe_rdma rdma;
		struct urdma_wqe_atomic atomic;
		struct urdma_wqe_flush flush;
		struct urdma_wqe_ud ud;
		struct urdma_wqe_bind bind;
		struct urdma_wqe_reg reg;
	};
	__u32 inline_len;
	__u32 xrc_srqn;		/* XRC_INI: the remote XRC SRQ; else 0 */
	__u64 reserved_1c0;
};

URDMA_ABI_ASSERT_SIZE(urdma_send_wqe, URDMA_WQE_BLOCK);

/*
 * A receive WQE (RQ and SRQ): this 16-byte header, then num_sge urdma_sge
 * entries, in the queue's stride.
 */
struct urdma_recv_wqe {
	__u64 wr_id;
	__u8 num_sge;
	__u8 reserved_48;
	__u16 reserved_50;
	__u32 reserved_60;
};

URDMA_ABI_ASSERT_SIZE(urdma_recv_wqe, 16);

/* urdma_cqe.opcode: the values of enum ibv_wc_opcode. */
enum urdma_cqe_opcode {
	URDMA_CQE_SEND = 0,
	URDMA_CQE_RDMA_WRITE = 1,
	URDMA_CQE_RDMA_READ = 2,
	URDMA_CQE_COMP_SWAP = 3,
	URDMA_CQE_FETCH_ADD = 4,
	URDMA_CQE_BIND_MW = 5,
	URDMA_CQE_LOCAL_INV = 6,
	URDMA_CQE_FLUSH = 8,
	URDMA_CQE_ATOMIC_WRITE = 9,
	URDMA_CQE_REG_MR = 10,		/* kernel CQs only */
	URDMA_CQE_RECV = 128,
	URDMA_CQE_RECV_RDMA_IMM = 129,
};

/* urdma_cqe.flags */
enum {
	URDMA_CQE_GRH = 1 << 0,		/* a UD receive starts with a GRH */
	URDMA_CQE_IMM = 1 << 1,		/* ex is imm_data (big endian) */
	URDMA_CQE_INV = 1 << 2,		/* ex is the invalidated rkey */
	URDMA_CQE_NET_SHIFT = 4,	/* bits 5:4: enum rdma_network_type */
	URDMA_CQE_NET_MASK = 3 << 4,
};

/* The network types in urdma_cqe.flags: the kernel's rdma_network_type. */
enum {
	URDMA_CQE_NET_IPV4 = 2,		/* RDMA_NETWORK_IPV4 */
	URDMA_CQE_NET_IPV6 = 3,		/* RDMA_NETWORK_IPV6 */
};

/*
 * What each WQE opcode is, in one table that the provider and the engine
 * both check WQEs against: urdma_wqe_ops[op] for enum urdma_wqe_opcode op.
 */

/*
 * urdma_wqe_op.qp_types: bit n set if QP type n (enum ib_qp_type and
 * enum ibv_qp_type share their values) may post the opcode.
 */
enum {
	URDMA_WOP_QP_RC = 1 << 2,
	URDMA_WOP_QP_UC = 1 << 3,
	URDMA_WOP_QP_UD = 1 << 4 | 1 << 1,	/* UD and GSI */
	URDMA_WOP_QP_ALL = URDMA_WOP_QP_RC | URDMA_WOP_QP_UC | URDMA_WOP_QP_UD,
};

/*
 * QP types by their (shared) enum ib_qp_type and enum ibv_qp_type values.
 * An XRC initiator (IB_QPT_XRC_INI, IBV_QPT_XRC_SEND) posts what an RC QP
 * does, each WQE naming the remote XRC SRQ (xrc_srqn).
 */
enum {
	URDMA_QPT_RC = 2,
	URDMA_QPT_XRC_INI = 9,
};

/* urdma_wqe_op.flags */
enum {
	URDMA_WOP_INLINE = 1 << 0,	/* may carry inline data (payload) */
	URDMA_WOP_IMM = 1 << 1,		/* ex is immediate data */
	URDMA_WOP_INV = 1 << 2,		/* ex is an rkey to invalidate */
	URDMA_WOP_RECV = 1 << 3,	/* consumes a receive WQE at the peer */
	URDMA_WOP_RD = 1 << 4,		/* answered with data into its SGEs */
	URDMA_WOP_RES = 1 << 5,		/* holds a responder resource */
	URDMA_WOP_ATOMIC = 1 << 6,	/* an 8-byte atomic: CMP_SWP, FETCH_ADD */
	URDMA_WOP_LOCAL = 1 << 7,	/* executed at the requester alone */
	URDMA_WOP_KERNEL = 1 << 8,	/* kernel QPs only */
};

/* urdma_wqe_op.local_access and .remote_access: the IB_ACCESS_* values. */
enum {
	URDMA_ACCESS_LOCAL_WRITE = 1 << 0,
	URDMA_ACCESS_REMOTE_WRITE = 1 << 1,
	URDMA_ACCESS_REMOTE_READ = 1 << 2,
	URDMA_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

/*
 * urdma_wqe_op.wire: the RC BTH opcodes (IBTA 9.2, table 39); the UC and
 * UD ones add their transport's bits.  A request of one packet has only
 * wire[URDMA_WIRE_ONLY]; a local operation has none.
 */
enum {
	URDMA_WIRE_ONLY, URDMA_WIRE_FIRST, URDMA_WIRE_MIDDLE, URDMA_WIRE_LAST,
	URDMA_WIRE_NONE = 0xff,
};

/* Not exchanged with the kernel: a table both sides compile in. */
struct urdma_wqe_op {
	__u8 opcode;		/* its own index, enum urdma_wqe_opcode */
	__u8 cqe_opcode;	/* enum urdma_cqe_opcode of its completion */
	__u8 qp_types;		/* URDMA_WOP_QP_* */
	__u8 local_access;	/* what its SGEs' MRs must grant */
	__u16 flags;		/* URDMA_WOP_* */
	__u8 remote_access;	/* what the responder's QP and MR must grant */
	__u8 wire[4];		/* indexed by URDMA_WIRE_* */
};

#define URDMA_WOP(op, cqe, qpts, flags, lacc, racc, only, first, mid, last) \
	{ URDMA_WQE_##op, URDMA_CQE_##cqe, (qpts), (lacc), (flags), (racc), \
	  { (only), (first), (mid), (last) } }
#define URDMA_WOP_1(op, cqe, qpts, flags, lacc, racc, only) \
	URDMA_WOP(op, cqe, qpts, flags, lacc, racc, only, URDMA_WIRE_NONE, \
		  URDMA_WIRE_NONE, URDMA_WIRE_NONE)
#define URDMA_WOP_LOC(op, cqe, flags) \
	URDMA_WOP_1(op, cqe, URDMA_WOP_QP_RC | URDMA_WOP_QP_UC, \
		    URDMA_WOP_LOCAL | (flags), 0, 0, URDMA_WIRE_NONE)

/* In the order of enum urdma_wqe_opcode: opcode is the index. */
static const struct urdma_wqe_op urdma_wqe_ops[URDMA_WQE_NUM_OPCODES] = {
	URDMA_WOP(RDMA_WRITE, RDMA_WRITE, URDMA_WOP_QP_RC | URDMA_WOP_QP_UC,
		  URDMA_WOP_INLINE, 0, URDMA_ACCESS_REMOTE_WRITE,
		  0x0a, 0x06, 0x07, 0x08),
	URDMA_WOP(RDMA_WRITE_IMM, RDMA_WRITE, URDMA_WOP_QP_RC | URDMA_WOP_QP_UC,
		  URDMA_WOP_INLINE | URDMA_WOP_IMM | URDMA_WOP_RECV, 0,
		  URDMA_ACCESS_REMOTE_WRITE, 0x0b, 0x06, 0x07, 0x09),
	URDMA_WOP(SEND, SEND, URDMA_WOP_QP_ALL,
		  URDMA_WOP_INLINE | URDMA_WOP_RECV, 0, 0,
		  0x04, 0x00, 0x01, 0x02),
	URDMA_WOP(SEND_IMM, SEND, URDMA_WOP_QP_ALL,
		  URDMA_WOP_INLINE | URDMA_WOP_IMM | URDMA_WOP_RECV, 0, 0,
		  0x05, 0x00, 0x01, 0x03),
	URDMA_WOP_1(RDMA_READ, RDMA_READ, URDMA_WOP_QP_RC,
		    URDMA_WOP_RD | URDMA_WOP_RES, URDMA_ACCESS_LOCAL_WRITE,
		    URDMA_ACCESS_REMOTE_READ, 0x0c),
	URDMA_WOP_1(ATOMIC_CMP_SWP, COMP_SWAP, URDMA_WOP_QP_RC,
		    URDMA_WOP_RD | URDMA_WOP_RES | URDMA_WOP_ATOMIC,
		    URDMA_ACCESS_LOCAL_WRITE, URDMA_ACCESS_REMOTE_ATOMIC, 0x13),
	URDMA_WOP_1(ATOMIC_FETCH_ADD, FETCH_ADD, URDMA_WOP_QP_RC,
		    URDMA_WOP_RD | URDMA_WOP_RES | URDMA_WOP_ATOMIC,
		    URDMA_ACCESS_LOCAL_WRITE, URDMA_ACCESS_REMOTE_ATOMIC, 0x14),
	URDMA_WOP_LOC(LOCAL_INV, LOCAL_INV, URDMA_WOP_INV),
	URDMA_WOP_LOC(BIND_MW, BIND_MW, 0),
	URDMA_WOP(SEND_INV, SEND, URDMA_WOP_QP_RC,
		  URDMA_WOP_INLINE | URDMA_WOP_INV | URDMA_WOP_RECV, 0, 0,
		  0x17, 0x00, 0x01, 0x16),
	URDMA_WOP_1(ATOMIC_WRITE, ATOMIC_WRITE, URDMA_WOP_QP_RC, URDMA_WOP_RES,
		    0, URDMA_ACCESS_REMOTE_WRITE, 0x1d),
	URDMA_WOP_1(FLUSH, FLUSH, URDMA_WOP_QP_RC, URDMA_WOP_RES, 0, 0, 0x1c),
	URDMA_WOP_LOC(REG_MR, REG_MR, URDMA_WOP_KERNEL),
};

/* The facts of opcode @op; an opcode out of range may be posted by none. */
static inline const struct urdma_wqe_op *urdma_wqe_op(unsigned int op)
{
	static const struct urdma_wqe_op none = {
		0xff, 0, 0, 0, 0, 0, { 0xff, 0xff, 0xff, 0xff }
	};

	return op < URDMA_WQE_NUM_OPCODES ? &urdma_wqe_ops[op] : &none;
}

/* May a QP of @qp_type (enum ib_qp_type / ibv_qp_type) post @op? */
static inline int urdma_wqe_op_allowed(unsigned int op, unsigned int qp_type)
{
	if (qp_type == URDMA_QPT_XRC_INI)
		qp_type = URDMA_QPT_RC;
	return qp_type < 8 && (urdma_wqe_op(op)->qp_types & (1u << qp_type));
}

/*
 * A completion.  status takes the values of enum ibv_wc_status.  The
 * engine writes every other field, then owner last (release); owner is 1
 * on the ring's first pass, 0 on the second, and so on.
 */
struct urdma_cqe {
	__u64 wr_id;
	__u32 byte_len;
	__u32 ex;		/* imm_data or invalidated rkey, see flags */
	__u32 qp_num;
	__u32 src_qp;		/* UD */
	__u16 pkey_index;
	__u8 opcode;		/* enum urdma_cqe_opcode */
	__u8 status;
	__u8 flags;		/* URDMA_CQE_* */
	__u8 sl;
	__u8 vendor_err;
	__u8 owner;		/* bit 0: phase */
};

URDMA_ABI_ASSERT_SIZE(urdma_cqe, URDMA_CQE_SIZE);

/*
 * The entry of a CQ created with IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION
 * (libibverbs asks for it for IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and
 * _WALLCLOCK): the CQE, then when the engine wrote it, on two clocks read
 * together.  The device clock is CLOCK_MONOTONIC in nanoseconds, so
 * hca_core_clock is 1000000 kHz and timestamp_mask all ones.  Both are
 * written before the owner bit that validates the CQE.
 */
struct urdma_cqe_ts {
	struct urdma_cqe cqe;
	__u64 ts_raw;		/* CLOCK_MONOTONIC, ns: the device clock */
	__u64 ts_wall;		/* CLOCK_REALTIME, ns */
	__u64 reserved[2];
};

#define URDMA_CQE_TS_SIZE	64
URDMA_ABI_ASSERT_SIZE(urdma_cqe_ts, URDMA_CQE_TS_SIZE);

/* The device clock: 1 GHz (nanoseconds), as hca_core_clock reports it. */
#define URDMA_HCA_CORE_CLOCK_KHZ 1000000

/*
 * CREATE_CQ.  buf_addr holds nent * URDMA_CQE_SIZE zeroed bytes (nent *
 * URDMA_CQE_TS_SIZE with timestamps), nent a power of two >= the
 * requested cqe.  RESIZE_CQ keeps the entry size.
 */
struct urdma_create_cq_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 nent;
	__u64 buf_addr;
	__u64 db_addr;		/* struct urdma_cq_db */
};

URDMA_ABI_ASSERT_SIZE(urdma_create_cq_cmd, 24);

struct urdma_create_cq_resp {
	__u32 comp_mask;
	__u32 cqn;
};

URDMA_ABI_ASSERT_SIZE(urdma_create_cq_resp, 8);

/*
 * RESIZE_CQ: a new ring, as for CREATE_CQ.  The kernel moves the CQEs not
 * yet consumed (from urdma_cq_db.cons) to the start of the new ring, with
 * the new ring's first-pass owner bit, and sets cons to 0; resp.moved
 * says how many.  The doorbell record stays.
 */
struct urdma_resize_cq_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 nent;
	__u64 buf_addr;
};

URDMA_ABI_ASSERT_SIZE(urdma_resize_cq_cmd, 16);

struct urdma_resize_cq_resp {
	__u32 comp_mask;
	__u32 moved;
};

URDMA_ABI_ASSERT_SIZE(urdma_resize_cq_resp, 8);

/*
 * CREATE_QP.  The SQ holds sq_nent WQEs of sq_stride bytes; the RQ holds
 * rq_nent of rq_stride (both 0 with an SRQ).  Strides are multiples of
 * URDMA_WQE_BLOCK, at most URDMA_MAX_WQE_BLOCKS blocks, and large enough
 * for the requested SGEs and inline data; the kernel reports the
 * capacities they give back in the core's response.
 */
struct urdma_create_qp_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 reserved_20;
	__u64 sq_buf_addr;
	__u64 rq_buf_addr;
	__u64 db_addr;		/* struct urdma_qp_db */
	__u32 sq_nent;
	__u32 sq_stride;
	__u32 rq_nent;
	__u32 rq_stride;
};

URDMA_ABI_ASSERT_SIZE(urdma_create_qp_cmd, 48);

struct urdma_create_qp_resp {
	__u32 comp_mask;
	__u32 engine;		/* the engine thread serving this QP */
};

URDMA_ABI_ASSERT_SIZE(urdma_create_qp_resp, 8);

/* CREATE_SRQ: nent receive WQEs of stride bytes. */
struct urdma_create_srq_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 nent;
	__u64 buf_addr;
	__u64 db_addr;		/* struct urdma_srq_db */
	__u32 stride;
	__u32 reserved_e0;
};

URDMA_ABI_ASSERT_SIZE(urdma_create_srq_cmd, 32);

struct urdma_create_srq_resp {
	__u32 comp_mask;
	__u32 srqn;
};

URDMA_ABI_ASSERT_SIZE(urdma_create_srq_resp, 8);

/*
 * MODIFY_SRQ with IB_SRQ_MAX_WR (resize): a new ring of nent receive WQEs
 * of the SRQ's stride, nent a power of two >= max_wr.  The kernel moves the
 * WQEs not yet consumed to the start of the new ring and sets the doorbell
 * record to prod = their number, cons = 0; the provider goes on posting at
 * that index.  Without IB_SRQ_MAX_WR the driver command is empty.
 */
struct urdma_modify_srq_cmd {
	__u32 comp_mask;	/* must be 0 */
	__u32 nent;
	__u64 buf_addr;
};

URDMA_ABI_ASSERT_SIZE(urdma_modify_srq_cmd, 16);

/* CREATE_AH: ah_num names the AH in UD send WQEs. */
struct urdma_create_ah_resp {
	__u32 comp_mask;
	__u32 ah_num;
};

URDMA_ABI_ASSERT_SIZE(urdma_create_ah_resp, 8);

#endif /* URDMA_ABI_USER_H */
