// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: device memory (ibv_alloc_dm).  The kernel's memory
 * (kernel/dm.c) is mapped here at the offset DM_ALLOC returns in
 * URDMA_ATTR_ALLOC_DM_MMAP_OFFSET; memcpy_to_dm and memcpy_from_dm copy
 * through the mapping.  As on mlx5, offsets and lengths are multiples of 4.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <infiniband/cmd_ioctl.h>
#include <rdma/ib_user_ioctl_cmds.h>

#include "urdma.h"

struct urdma_dm {
	struct verbs_dm vdm;
	void *addr;		/* the mapping */
	size_t len;		/* bytes asked for */
	size_t map_len;		/* bytes mapped: whole pages */
};

static struct urdma_dm *to_udm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct urdma_dm, vdm.dm);
}

/* [off, off + len) inside the DM, both 4-byte aligned. */
static bool urdma_dm_range_ok(const struct urdma_dm *dm, uint64_t off,
			      size_t len)
{
	return !(off & 3) && !(len & 3) && off <= dm->len &&
	       len <= dm->len - off;
}

static int urdma_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t dm_offset,
			      const void *host_addr, size_t length)
{
	struct urdma_dm *dm = to_udm(ibdm);

	if (!urdma_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy((char *)dm->addr + dm_offset, host_addr, length);
	return 0;
}

static int urdma_memcpy_from_dm(void *host_addr, struct ibv_dm *ibdm,
				uint64_t dm_offset, size_t length)
{
	struct urdma_dm *dm = to_udm(ibdm);

	if (!urdma_dm_range_ok(dm, dm_offset, length))
		return EINVAL;
	memcpy(host_addr, (char *)dm->addr + dm_offset, length);
	return 0;
}

struct ibv_dm *urdma_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr)
{
	DECLARE_COMMAND_BUFFER(cmdb, UVERBS_OBJECT_DM, UVERBS_METHOD_DM_ALLOC,
			       1);
	long page = sysconf(_SC_PAGESIZE);
	struct urdma_dm *dm;
	uint64_t offset;
	int err;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm) {
		errno = ENOMEM;
		return NULL;
	}
	fill_attr_out_ptr(cmdb, URDMA_ATTR_ALLOC_DM_MMAP_OFFSET, &offset);
	err = ibv_cmd_alloc_dm(ctx, attr, &dm->vdm, cmdb);
	if (err)
		goto err_free;
	dm->len = attr->length;
	dm->map_len = (attr->length + page - 1) & ~(size_t)(page - 1);
	dm->addr = mmap(NULL, dm->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			ctx->cmd_fd, offset);
	if (dm->addr == MAP_FAILED) {
		err = errno;
		ibv_cmd_free_dm(&dm->vdm);
		goto err_free;
	}
	dm->vdm.dm.memcpy_to_dm = urdma_memcpy_to_dm;
	dm->vdm.dm.memcpy_from_dm = urdma_memcpy_from_dm;
	return &dm->vdm.dm;

err_free:
	free(dm);
	errno = err;
	return NULL;
}

int urdma_free_dm(struct ibv_dm *ibdm)
{
	struct urdma_dm *dm = to_udm(ibdm);
	int err;

	err = ibv_cmd_free_dm(&dm->vdm);
	if (err)
		return err;
	munmap(dm->addr, dm->map_len);
	free(dm);
	return 0;
}
