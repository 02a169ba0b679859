// SPDX-License-Identifier: GPL-2.0
/*
 * Error messages and the version string. The codes and their texts come
 * from one X-macro list in perfspy.h (elfutils DWFL_ERRORS does the same),
 * so an enum value can never lose its message.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perfspy.h"

struct err_msg {
	int code;
	const char *msg;
};

static const struct err_msg err_msgs[] = {
#define PERFSPY_X_MSG(name, value, msg) { value, msg },
	PERFSPY_ERRORS(PERFSPY_X_MSG)
#undef PERFSPY_X_MSG
};

PERFSPY_API int perfspy_strerror(int err, char *buf, size_t size)
{
	size_t i;

	if (!buf || !size)
		return -EINVAL;
	if (err < 0)
		err = -err;
	for (i = 0; i < sizeof(err_msgs) / sizeof(err_msgs[0]); i++) {
		if (err_msgs[i].code == err) {
			snprintf(buf, size, "%s", err_msgs[i].msg);
			return 0;
		}
	}
	if (err > 0 && err < 4000) {
		/* strerror_r (GNU) may or may not use buf. */
		const char *s = strerror_r(err, buf, size);

		if (s != buf)
			snprintf(buf, size, "%s", s);
		return 0;
	}
	snprintf(buf, size, "unknown error %d", err);
	return -EINVAL;
}

PERFSPY_API const char *perfspy_version_string(void)
{
	return PERFSPY_VERSION;
}
