// SPDX-License-Identifier: MIT
/* libvirt-err.c - libvirt's last error (see libvirt-err.h). */
#include "libvirt-err.h"

#include <glib.h>
#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

char *ha_lv_error(void)
{
	/* virGetLastError() reads the thread's error without resetting it. */
	virErrorPtr e = virGetLastError();

	return g_strdup(e && e->message ? e->message : "unknown libvirt error");
}

static void silence(void *user, virErrorPtr e)
{
}

void ha_lv_quiet(void)
{
	virSetErrorFunc(NULL, silence);
}
