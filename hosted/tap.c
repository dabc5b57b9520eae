/* SPDX-License-Identifier: MIT
 *
 * The hosted NIC: a Linux TAP device opened through /dev/net/tun with IFF_TAP|IFF_NO_PI,
 * so every read is one Ethernet frame and every write sends one. No offloads are enabled
 * (no virtio-net header), so the kernel never hands us a frame larger than the MTU it was
 * configured with. Never changes the device's addresses or routes: that is the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "hosted/hosted.h"

int hosted_tap_open(const char *name, const char **err)
{
	struct ifreq ifr;
	int fd, e;

	if (!name || !*name || strlen(name) >= IFNAMSIZ) {
		*err = "bad interface name";
		return -EINVAL;
	}
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		e = errno;
		*err = "open /dev/net/tun";
		return -e;
	}
	memset(&ifr, 0, sizeof ifr);
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	memcpy(ifr.ifr_name, name, strlen(name));
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		e = errno;
		close(fd);
		*err = "TUNSETIFF";
		return -e;
	}
	return fd;
}
