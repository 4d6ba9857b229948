// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Forward-compatible udata handling (after efa_create_qp): a command must
 * cover its last mandatory field, an unknown tail must be zero, and the
 * response is truncated to what the caller can take.
 */
#include "urdma.h"

/**
 * urdma_udata_get_cmd - copy a driver command from user space
 * @udata: the core's udata; inlen may be 0 for an old provider
 * @cmd: destination, zeroed first
 * @size: sizeof(*cmd)
 * @min_size: offsetofend() of the last mandatory field; 0 if none
 *
 * Return: 0, -EINVAL for a short command, -EOPNOTSUPP for a longer one
 * with a non-zero tail (a feature this kernel lacks), or -EFAULT.
 */
int urdma_udata_get_cmd(struct ib_udata *udata, void *cmd, size_t size,
			size_t min_size)
{
	size_t inlen = udata ? udata->inlen : 0;

	memset(cmd, 0, size);
	if (inlen < min_size)
		return -EINVAL;
	if (inlen > size &&
	    !ib_is_udata_cleared(udata, size, inlen - size))
		return -EOPNOTSUPP;
	if (!inlen)
		return 0;
	return ib_copy_from_udata(cmd, udata, min(size, inlen));
}

/**
 * urdma_udata_no_cmd - check a verb that takes no driver command
 * @udata: the core's udata, or NULL for kernel callers
 *
 * A newer provider may send a command this kernel does not know; it is
 * accepted only if all zero.  Return: 0 or -EOPNOTSUPP.
 */
int urdma_udata_no_cmd(struct ib_udata *udata)
{
	if (udata && udata->inlen &&
	    !ib_is_udata_cleared(udata, 0, udata->inlen))
		return -EOPNOTSUPP;
	return 0;
}

/**
 * urdma_udata_put_resp - copy a driver response to user space
 * @udata: the core's udata
 * @resp: the response
 * @size: sizeof(*resp); truncated to udata->outlen for older providers
 */
int urdma_udata_put_resp(struct ib_udata *udata, void *resp,
			 size_t size)
{
	if (!udata || !udata->outlen)
		return 0;
	return ib_copy_to_udata(udata, resp, min(size, udata->outlen));
}
