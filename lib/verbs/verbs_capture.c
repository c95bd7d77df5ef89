/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Capture: a device's frames into a pcapng file, every device's into one file for
 * DPV_CAPTURE, or one device's for dpv_verbs_capture_start(); each file finished at exit.
 * The engine runs the capture (dpv_dev_capture_*()); this keeps which devices share
 * DPV_CAPTURE's file and what the file says of them.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "dpv_verbs.h"
#include "verbs_priv.h"

/* A device that writes DPV_CAPTURE's file, which every device the process opens writes;
 * once every device of it has stopped, devices opened later are not captured (the file
 * is not made anew). */
static struct dpv_dev *env_capture;
static bool env_capture_over;

/* The pcapng section comment: which DPDK port each device is (the file names its
 * interfaces after DPDK ports), and which devices the capture started with. */
static void capture_comment(char *buf, size_t n, const char *captured)
{
	size_t len = (size_t)snprintf(buf, n, "dpverbs %s, pid %d:", DPV_VERSION, (int)getpid());

	for (unsigned int i = 0; i < dpv_verbs_n_devices && len < n; i++)
		len += (size_t)snprintf(buf + len, n - len, " %s is DPDK port %u%s",
					dpv_verbs_devices[i]->ibdev.name,
					dpv_verbs_devices[i]->ethdev_port,
					i + 1 < dpv_verbs_n_devices ? "," : ";");
	if (len < n)
		snprintf(buf + len, n - len, " captured: %s", captured);
}

/* The device name of each ethdev port that has one, for the capture file's interfaces
 * (dpv_verbs_devices_lock held). */
static const char *const *capture_port_names(const char *names[RTE_MAX_ETHPORTS])
{
	for (unsigned int i = 0; i < RTE_MAX_ETHPORTS; i++)
		names[i] = NULL;
	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++)
		if (dpv_verbs_devices[i]->ethdev_port < RTE_MAX_ETHPORTS)
			names[dpv_verbs_devices[i]->ethdev_port] = dpv_verbs_devices[i]->ibdev.name;
	return names;
}

/* Stop a device's capture (dpv_verbs_devices_lock held).
 * @return as dpv_dev_capture_stop() */
static int stop_capture(struct dpv_dev *dev)
{
	if (dev == env_capture) {
		/* The file lives while any device writes it: keep another one to join. */
		env_capture = NULL;
		for (unsigned int i = 0; i < dpv_verbs_n_devices && env_capture == NULL; i++) {
			struct dpv_dev *o = dpv_verbs_devices[i]->dev;

			if (o != NULL && o != dev && dpv_dev_capture_same(o, dev))
				env_capture = o;
		}
		env_capture_over = env_capture == NULL;
	}
	return dpv_dev_capture_stop(dev);
}

/*
 * At exit, finish the captures, so their files are whole: devices live as long as the
 * process and nothing else would close them. Runs after linger(), so the capture sees
 * the last frames.
 */
void dpv_verbs_capture_finish_all(void)
{
	pthread_mutex_lock(&dpv_verbs_devices_lock);
	for (unsigned int i = 0; i < dpv_verbs_n_devices; i++) {
		struct dpv_dev *dev = dpv_verbs_devices[i]->dev;
		int ret;

		if (dev == NULL || !dpv_dev_capturing(dev))
			continue;
		ret = stop_capture(dev);
		if (ret != 0)
			dpv_verbs_complain(
				"%s: the capture file misses frames: writing it failed: %s",
				dpv_verbs_devices[i]->ibdev.name, strerror(ret));
	}
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
}

/* DPV_CAPTURE=<file.pcapng>: every frame of every device of the process goes to that
 * one file, each device's port an interface of it (dpv_verbs_devices_lock held). */
int dpv_verbs_capture_env(struct dpv_device *d)
{
	const char *names[RTE_MAX_ETHPORTS];
	char comment[512];
	int ret;

	if (dpv_verbs_conf.capture[0] == '\0' || env_capture_over)
		return 0;
	if (env_capture != NULL) {
		ret = dpv_dev_capture_join(d->dev, env_capture);
	} else {
		capture_comment(comment, sizeof(comment), "every device it opens (DPV_CAPTURE)");
		ret = dpv_dev_capture_open(d->dev, dpv_verbs_conf.capture, comment,
					   capture_port_names(names));
		if (ret == 0)
			env_capture = d->dev;
	}
	if (ret != 0)
		dpv_verbs_complain("DPV_CAPTURE: cannot capture %s into %s: %s", d->ibdev.name,
				   dpv_verbs_conf.capture, strerror(ret));
	return ret;
}

int dpv_verbs_capture_start(struct ibv_context *context, const char *path)
{
	const char *names[RTE_MAX_ETHPORTS];
	struct dpv_context *c;
	char comment[512];
	int ret;

	if (context == NULL || path == NULL || path[0] == '\0')
		return EINVAL;
	c = to_ctx(context);
	pthread_mutex_lock(&dpv_verbs_devices_lock);
	if (dpv_dev_capturing(c->dev)) {
		ret = EBUSY;
	} else {
		capture_comment(comment, sizeof(comment), c->device->ibdev.name);
		ret = dpv_dev_capture_open(c->dev, path, comment, capture_port_names(names));
	}
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return ret;
}

int dpv_verbs_capture_stop(struct ibv_context *context)
{
	struct dpv_context *c;
	int ret;

	if (context == NULL)
		return EINVAL;
	c = to_ctx(context);
	pthread_mutex_lock(&dpv_verbs_devices_lock);
	ret = dpv_dev_capturing(c->dev) ? stop_capture(c->dev) : ENOENT;
	pthread_mutex_unlock(&dpv_verbs_devices_lock);
	return ret;
}
