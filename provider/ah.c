// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * urdma provider: address handles.  The kernel resolves the destination;
 * ah_num names the AH in UD send WQEs.
 */
#include <errno.h>
#include <stdlib.h>

#include "urdma.h"

struct ibv_ah *urdma_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct urdma_cmd_create_ah_resp resp = {};
	struct urdma_ah *ah;
	int err;

	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}

	err = ibv_cmd_create_ah(pd, &ah->ibvah, attr, &resp.ibv_resp,
				sizeof(resp));
	if (err) {
		free(ah);
		errno = err;
		return NULL;
	}

	ah->ah_num = resp.ah_num;
	return &ah->ibvah;
}

int urdma_destroy_ah(struct ibv_ah *ibvah)
{
	struct urdma_ah *ah = to_urdma_ah(ibvah);
	int err;

	err = ibv_cmd_destroy_ah(ibvah);
	if (err)
		return err;

	free(ah);
	return 0;
}
