/* SPDX-License-Identifier: Apache-2.0 */
#include "base/ratelimit.h"

bool ratelimit_take(struct ratelimit *rl, uint64_t now_ns, uint64_t *ret_suppressed)
{
	if (rl->last_ns == 0) {
		rl->tokens = rl->burst;
	} else if (now_ns > rl->last_ns) {
		rl->tokens += (double)(now_ns - rl->last_ns) / 1e9 * rl->rate;
		if (rl->tokens > rl->burst)
			rl->tokens = rl->burst;
	}
	if (now_ns > rl->last_ns)
		rl->last_ns = now_ns;
	if (rl->tokens < 1.0) {
		rl->suppressed++;
		return false;
	}
	rl->tokens -= 1.0;
	*ret_suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
