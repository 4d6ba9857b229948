// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: verbs.  Every verb returns a positive errno (or NULL with
 * errno set), as the ibv_* man pages promise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "urdma.h"

int urdma_query_device_ex(struct ibv_context *ibvctx,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ib_uverbs_ex_query_device_resp resp;
	size_t resp_size = sizeof(resp);
	uint64_t fw;
	int err;

	err = ibv_cmd_query_device_any(ibvctx, input, attr, attr_size, &resp,
				       &resp_size);
	if (err)
		return err;

	/* fw_ver is major.minor.sub_minor in bits 47:32, 31:16 and 15:0. */
	fw = resp.base.fw_ver;
	snprintf(attr->orig_attr.fw_ver, sizeof(attr->orig_attr.fw_ver),
		 "%u.%u.%u", (unsigned int)(fw >> 32) & 0xffff,
		 (unsigned int)(fw >> 16) & 0xffff, (unsigned int)fw & 0xffff);
	return 0;
}

int urdma_query_port(struct ibv_context *ibvctx, uint8_t port,
		     struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd = {};

	return ibv_cmd_query_port(ibvctx, port, attr, &cmd, sizeof(cmd));
}

struct ibv_pd *urdma_alloc_pd(struct ibv_context *ibvctx)
{
	struct urdma_cmd_alloc_pd_resp resp = {};
	struct ibv_alloc_pd cmd = {};
	struct urdma_pd *pd;
	int err;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_alloc_pd(ibvctx, &pd->ibvpd, &cmd, sizeof(cmd),
			       &resp.ibv_resp, sizeof(resp));
	if (err)
		goto err_free_pd;

	pd->pdn = resp.pdn;
	return &pd->ibvpd;

err_free_pd:
	free(pd);
	errno = err;
	return NULL;
}

int urdma_dealloc_pd(struct ibv_pd *ibvpd)
{
	struct urdma_pd *pd = to_urdma_pd(ibvpd);
	int err;

	err = ibv_cmd_dealloc_pd(ibvpd);
	if (err)
		return err;

	free(pd);
	return 0;
}
