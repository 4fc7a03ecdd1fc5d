/*
 * Private to config/config*.c: ssh.proxy_jump and ssh.proxy_jump_host_key
 * (docs/providers.md "Private workers through a bastion"), read by
 * config/config_jump.c.
 */
#ifndef TPF_CONFIG_JUMP_H
#define TPF_CONFIG_JUMP_H

#include "config/config.h"
#include "config/config_yaml.h"

/* Read ssh.proxy_jump (v) and ssh.proxy_jump_host_key (key); either may be
 * NULL (absent). Fills f->ssh.jump and f->ssh.jump_host_key; every error is
 * recorded in c with its position. A host key without a proxy_jump is an
 * error (it would be silently unused). */
void cfg_read_jump(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v, yaml_node_t *key);

#endif
