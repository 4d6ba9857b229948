// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs: user contexts and protection domains.
 */
#include "urdma.h"
#include "../uapi/rdma/urdma-abi.h"

int urdma_alloc_ucontext(struct ib_ucontext *ibuctx, struct ib_udata *udata)
{
	struct urdma_alloc_ucontext_resp resp = {};
	struct urdma_ucontext *uctx = to_uctx(ibuctx);
	struct urdma_dev *udev = to_udev(ibuctx->device);
	struct urdma_alloc_ucontext_cmd cmd;
	struct urdma_mmap_entry *state;
	int ret;

	/* An empty command is an old provider; that is fine. */
	ret = urdma_udata_get_cmd(udata, &cmd, sizeof(cmd), 0);
	if (ret)
		return ret;
	if (cmd.comp_mask || cmd.reserved_20)
		return -EINVAL;

	mutex_init(&uctx->mem_lock);
	uctx->ranges = RB_ROOT_CACHED;

	/* The engine state page, for doorbell elision. */
	state = kzalloc(sizeof(*state), GFP_KERNEL);
	if (!state) {
		ret = -ENOMEM;
		goto err_mutex;
	}
	ret = rdma_user_mmap_entry_insert(ibuctx, &state->rdma,
					  URDMA_ENGINE_PAGE_SIZE);
	if (ret) {
		kfree(state);
		goto err_mutex;
	}
	uctx->state_entry = &state->rdma;
	resp.num_engines = udev->num_engines;
	resp.engine_mmap_offset =
		rdma_user_mmap_get_offset(uctx->state_entry);

	resp.device_caps = URDMA_DEVICE_CAP_ERR_QPS;
	resp.max_qp_wr = URDMA_MAX_QP_WR;
	resp.max_sge = URDMA_MAX_SGE;
	resp.max_inline_data = URDMA_MAX_INLINE;
	resp.max_cqe = URDMA_MAX_CQE;
	resp.max_srq_wr = URDMA_MAX_SRQ_WR;
	resp.page_shift = PAGE_SHIFT;
	ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
	if (ret)
		goto err_entry;
	return 0;

err_entry:
	rdma_user_mmap_entry_remove(uctx->state_entry);
err_mutex:
	mutex_destroy(&uctx->mem_lock);
	return ret;
}

void urdma_dealloc_ucontext(struct ib_ucontext *ibuctx)
{
	struct urdma_ucontext *uctx = to_uctx(ibuctx);

	/* The core destroyed every object first, so nothing is pinned. */
	WARN_ON(!RB_EMPTY_ROOT(&uctx->ranges.rb_root));
	rdma_user_mmap_entry_remove(uctx->state_entry);
	mutex_destroy(&uctx->mem_lock);
}

/*
 * The device goes away while the context is open (rdma link delete, the
 * netdev unregistering, module unload), or moves to another network
 * namespace (rdma dev set ... netns, which the core allows only to
 * drivers that can be disassociated).  The core has destroyed every
 * object of the context by now, and the engine reaches a process's memory
 * only through those objects, so nothing is left to stop.  The state page
 * stays mapped, read-only: vm_insert_page() holds a reference, so the page
 * outlives the device if need be.  The process sees IBV_EVENT_DEVICE_FATAL
 * and EIO from every later command.
 */
void urdma_disassociate_ucontext(struct ib_ucontext *ibuctx)
{
}

/*
 * Map the engine state page, read-only, or device memory (dm.c), read and
 * write, no more of it than there is.
 */
int urdma_mmap(struct ib_ucontext *ibuctx, struct vm_area_struct *vma)
{
	struct urdma_dev *udev = to_udev(ibuctx->device);
	struct rdma_user_mmap_entry *entry;
	struct urdma_mmap_entry *e;
	int ret;

	entry = rdma_user_mmap_entry_get(ibuctx, vma);
	if (!entry)
		return -EINVAL;
	e = container_of(entry, struct urdma_mmap_entry, rdma);
	if (e->dm_kva) {
		unsigned long n = vma_pages(vma);

		ret = n > e->dm_npages ? -EINVAL :
		      vm_insert_pages(vma, vma->vm_start, e->dm_pages, &n);
	} else if (entry != to_uctx(ibuctx)->state_entry) {
		ret = -EINVAL;
	} else if (vma->vm_flags & VM_WRITE) {
		ret = -EPERM;
	} else {
		urdma_vm_flags_clear(vma, VM_MAYWRITE);
		ret = vm_insert_page(vma, vma->vm_start, udev->state_page);
	}
	rdma_user_mmap_entry_put(entry);
	return ret;
}

/* An entry is gone and unused: device memory goes with it. */
void urdma_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct urdma_mmap_entry *e = container_of(entry,
						  struct urdma_mmap_entry,
						  rdma);

	urdma_dm_free_pages(e);
	kfree(e);
}

int urdma_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibpd->device);
	struct urdma_alloc_pd_resp resp = {};
	struct urdma_pd *pd = to_upd(ibpd);
	int id, ret;

	ret = urdma_udata_no_cmd(udata);
	if (ret)
		return ret;

	id = ida_alloc_max(&udev->pd_ida, URDMA_MAX_PD - 1, GFP_KERNEL);
	if (id < 0)
		return id == -ENOSPC ? -ENOMEM : id;
	pd->pdn = id;

	resp.pdn = pd->pdn;
	ret = urdma_udata_put_resp(udata, &resp, sizeof(resp));
	if (ret)
		goto err_free_pdn;
	return 0;

err_free_pdn:
	ida_free(&udev->pd_ida, pd->pdn);
	return ret;
}

int urdma_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct urdma_dev *udev = to_udev(ibpd->device);

	ida_free(&udev->pd_ida, to_upd(ibpd)->pdn);
	return 0;
}

/*
 * An XRC domain is only a name that XRC SRQs and XRC_TGT QPs share; the
 * core keeps it alive while either uses it.
 */
int urdma_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return urdma_udata_no_cmd(udata);
}

int urdma_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	return 0;
}
