/*
 * Private to config/config*.c: the fleet file's `notify` key (README.md
 * "Notifications"), read by config/config_notify.c.
 */
#ifndef TPF_CONFIG_NOTIFY_H
#define TPF_CONFIG_NOTIFY_H

#include "config/config.h"
#include "config/config_yaml.h"

/*
 * Read `notify: { webhook: URL, events: [...], payload: full|text }` (v may
 * be NULL: absent) into f->notify. webhook is required; it must be an
 * https URL, or an http one whose host is this machine (localhost,
 * 127.0.0.0/8, ::1), since a payload names the fleet's nodes. Errors name
 * the URL's scheme and host only, never its path or query, which for Slack
 * and Google Chat is the webhook's secret. Every error is recorded in c.
 */
void cfg_read_notify(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v);

/*
 * Read `monitoring: { project: P }` (v may be NULL: absent) into
 * f->monitoring (config/config_monitoring.c): P a Google Cloud project ID,
 * at most TPF_MONITORING_PROJECT_MAX bytes, of lowercase letters, digits,
 * '-', and '.' and ':' for a domain-scoped one ("example.com:proj"), as
 * provider.gcp.project. Every error is recorded in c with its line and
 * column.
 */
#define TPF_MONITORING_PROJECT_MAX 100
void cfg_read_monitoring(struct cfg *c, struct tpf_fleet *f, yaml_node_t *v);

#endif
