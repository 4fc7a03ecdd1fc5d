/*
 * ssh.proxy_jump: "[user@]host[:port]", the syntax of OpenSSH's ProxyJump
 * and `ssh -J` (ssh_config(5), "ProxyJump": "[user@]host[:port]"; an IPv6
 * address in square brackets), and the bastion's known host key.
 */
#include "config/config_jump.h"
#include "config/config_walk.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

void tpf_jump_release(struct tpf_jump *j)
{
	free(j->user);
	free(j->host);
	memset(j, 0, sizeof(*j));
}

/* A user or host as ssh(1) and libssh2 take it: not empty, no leading '-',
 * no space, control character, '/', '@' or quote. */
static int plain_word(const char *s, size_t n)
{
	if (!n || s[0] == '-')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch <= ' ' || ch == 0x7f || strchr("/@'\"\\`$;,", ch))
			return 0;
	}
	return 1;
}

static int parse_port(const char *p, int *out)
{
	long v = 0;
	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		v = v * 10 + (*p - '0');
		if (v > 65535)
			return -1;
	}
	if (v < 1)
		return -1;
	*out = (int)v;
	return 0;
}

int tpf_jump_parse(const char *s, struct tpf_jump *out, const char **why)
{
	memset(out, 0, sizeof(*out));
	const char *at = strchr(s, '@');
	const char *h = s;
	if (at) {
		if (strchr(at + 1, '@'))
			return *why = "it has more than one '@'", -1;
		if (!plain_word(s, (size_t)(at - s)))
			return *why = "the user before '@' is empty or has a character a user name cannot have", -1;
		h = at + 1;
	}
	const char *host = h, *end, *port = NULL;
	if (*h == '[') {
		/* "[v6]" or "[v6]:port" */
		host = h + 1;
		end = strchr(host, ']');
		if (!end)
			return *why = "the '[' of an IPv6 address is not closed", -1;
		if (end[1] == ':')
			port = end + 2;
		else if (end[1])
			return *why = "only ':PORT' may follow ']'", -1;
		for (const char *p = host; p < end; p++)
			if (!strchr("0123456789abcdefABCDEF:.", *p))
				return *why = "the host in brackets is not an IPv6 address", -1;
	} else {
		end = strchr(h, ':');
		if (end) {
			if (strchr(end + 1, ':'))
				return *why = "an IPv6 address must be in brackets, as in [fd00::1]:22", -1;
			port = end + 1;
		} else {
			end = h + strlen(h);
		}
	}
	if (!plain_word(host, (size_t)(end - host)))
		return *why = "the host is empty or has a character a host name cannot have", -1;
	int portnum = 0;
	if (port && parse_port(port, &portnum))
		return *why = "the port after ':' must be a number from 1 to 65535", -1;
	out->user = at ? xstrndup(s, (size_t)(at - s)) : NULL;
	out->host = xstrndup(host, (size_t)(end - host));
	out->port = portnum;
	return 0;
}

/* "TYPE BASE64 [comment]": checked in shape here; the SSH transport
 * decodes it (a key it cannot decode is reported at the first connect). */
static int key_line_shape(const char *s)
{
	const char *sp = strchr(s, ' ');
	if (!sp || sp == s)
		return 0;
	size_t b = strspn(sp + 1, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=");
	return b >= 16 && (sp[1 + b] == '\0' || sp[1 + b] == ' ');
}

void cfg_read_jump(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, yaml_node_t *key)
{
	if (v) {
		const char *s = cfg_want_text(c, v, "proxy_jump", "a bastion as [user@]host[:port]", 0);
		const char *why = NULL;
		if (s && tpf_jump_parse(s, &f->ssh.jump, &why))
			cfg_error(c, v, "write the bastion as OpenSSH's ProxyJump does: bastion.example.com, tpuform@10.0.0.2:2222 or [fd00::1]:22",
				  "'proxy_jump' must be [user@]host[:port]: %s, got '%s'", why, s);
	}
	if (!key)
		return;
	const char *k = cfg_want_text(c, key, "proxy_jump_host_key", "a host key line 'TYPE BASE64'", 0);
	if (!k)
		return;
	if (!v)
		cfg_error(c, key, "set ssh.proxy_jump to the bastion this key belongs to, or remove the key",
			  "'proxy_jump_host_key' is set but 'proxy_jump' is not");
	else if (!key_line_shape(k))
		cfg_error(c, key, "copy a line of 'ssh-keyscan BASTION' without the host name, or the bastion's /etc/ssh/ssh_host_ed25519_key.pub",
			  "'proxy_jump_host_key' must be a host key as 'TYPE BASE64', got '%.40s'", k);
	else
		f->ssh.jump_host_key = xstrdup(k);
}
