/*
 * fakegcp: command line, start-up and clean shutdown.
 * The options are the agreed interface in tests/fakegcp/README.md; the
 * ones marked (extra) are additions.
 */
#include <getopt.h>
#include <limits.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/fakegcp/fakegcp.h"
#include "util/diag.h"
#include "util/fs.h"
#include "util/xalloc.h"

#define DEFAULT_DISCOVERY "tests/fakegcp/tpu.v2.discovery.json"
#define DEFAULT_COMPUTE_SCHEMA "tests/fakegcp/compute.v1.schema.json"

struct fg_opts fg_opt;

static const char usage[] =
	"usage: fakegcp [options]\n"
	"  --listen ADDR             loopback address (default 127.0.0.1)\n"
	"  --port N                  port (default 0: any free one)\n"
	"  --port-file FILE          write the bound port there once listening\n"
	"  --project P               project id served (default test-project)\n"
	"  --project-number N        (extra) project number (default 123456789012)\n"
	"  --discovery FILE          discovery document (default " DEFAULT_DISCOVERY ",\n"
	"                            else next to this program)\n"
	"  --latency-ms N            added to every API request\n"
	"  --op-seconds S            time until an operation is done (default 0.2)\n"
	"  --page-size N             most items per list page, a larger pageSize is\n"
	"                            coerced to it (default 1000); none asked: 50 or N\n"
	"  --quota ZONE:TYPE:SCHED=N node quota; TYPE may be *, SCHED preemptible|spot|on-demand\n"
	"  --capacity ZONE=N         nodes the zone can hold; beyond: operation error 8\n"
	"  --zone-fault ZONE=KIND    (extra) unauthorized: every request there is a 403\n"
	"                            \"Location ZONE is not found or access is unauthorized.\";\n"
	"                            preempted: creates end PREEMPTED, operation error 3\n"
	"  --fault-rate R            fraction 0..1 of API requests given a fault\n"
	"  --fault-kinds LIST        of 429,500,502,503,504,drop,slow (default 429,500,503)\n"
	"  --seed N                  random seed (faults, ids)\n"
	"  --auth none|token         token: API requests need a bearer issued here\n"
	"  --sa-public-key FILE      PEM key that service-account JWTs must be signed with\n"
	"  --sa-email EMAIL          (extra) the only JWT issuer accepted\n"
	"  --authorized-user ID:SECRET:REFRESH   accepted refresh-token grant\n"
	"  --token-ttl S             lifetime of issued tokens (default 3600)\n"
	"  --worker-ip-base A.B.C.D  first worker address (default 127.0.10.1)\n"
	"  --worker-port N           networkEndpoints[].port (default 22)\n"
	"  --external-ips            also fill accessConfig.externalIp\n"
	"  --accelerator-type T      (extra) offer T in every zone besides the fixed table\n"
	"  --worker-dir DIR          (extra) workers laid out by tests/e2e/sshd.sh: their\n"
	"                            guest agent writes DIR/wI/home/.ssh/authorized_keys\n"
	"                            from metadata and publishes DIR/wI/hostkey.pub\n"
	"  --worker-user NAME        (extra) the workers' login user (default root)\n"
	"  --project-metadata K=V    (extra) project metadata entry (Compute), repeatable\n"
	"  --oslogin-username NAME   (extra) OS Login POSIX user (default: from the email)\n"
	"  --token-email EMAIL       (extra) /tokeninfo's email (default tester@example.com)\n"
	"  --bucket NAME             (extra) a Cloud Storage bucket that exists, repeatable\n"
	"  --log FILE                append one JSON line per request\n"
	"  --verbose                 (extra) libmicrohttpd errors to stderr\n"
	"  --wif-audience AUD        (extra) the workload identity provider STS (/v1/token) accepts\n"
	"  --wif-subject-token T     (extra) the subject token STS accepts\n"
	"  --oidc-request-token T    (extra) bearer that GET /oidc/idtoken wants (GitHub-style)\n"
	"  --impersonate-sa EMAIL    (extra) the account generateAccessToken impersonates\n"
	"  --impersonate-caller any|sts  (extra) who may call it (default any issued token)\n"
	"  --require-user-project P  (extra) API requests need x-goog-user-project: P\n"
	"  --compute-schema FILE     (extra) Compute schema (default " DEFAULT_COMPUTE_SCHEMA ",\n"
	"                            else next to this program)\n"
	"  --compute-stage-seconds S (extra) time a Compute instance spends in each of PENDING,\n"
	"                            PROVISIONING, STAGING (default: --op-seconds)\n"
	"  --compute-wait-seconds S  (extra) most a Compute operations.wait blocks (default 120)\n"
	"  --billing-api-key K       (extra) the one API key the Billing Catalog takes (default any)\n"
	"  --billing-disabled        (extra) the Billing Catalog answers 403 SERVICE_DISABLED\n"
	"  --delete-seconds S        (extra) how long the delete of a Cloud TPU node, a Compute\n"
	"                            instance or a MIG runs (default: --op-seconds)\n";

enum {
	O_LISTEN = 256, O_PORT, O_PORT_FILE, O_PROJECT, O_PROJECT_NUMBER, O_DISCOVERY,
	O_LATENCY, O_OP_SECONDS, O_PAGE_SIZE, O_QUOTA, O_CAPACITY, O_ZONE_FAULT, O_FAULT_RATE, O_FAULT_KINDS,
	O_SEED, O_AUTH, O_SA_KEY, O_SA_EMAIL, O_USER, O_TOKEN_TTL, O_IP_BASE, O_WORKER_PORT,
	O_EXTERNAL_IPS, O_ACCEL, O_LOG, O_VERBOSE, O_WIF_AUD, O_WIF_TOKEN, O_OIDC_TOKEN,
	O_IMP_SA, O_IMP_CALLER, O_USER_PROJECT, O_BILLING_KEY, O_BILLING_OFF,
	O_WORKER_DIR, O_WORKER_USER, O_PROJECT_MD,
	O_OSLOGIN_USER, O_TOKEN_EMAIL, O_BUCKET, O_CE_SCHEMA, O_CE_STAGE, O_CE_WAIT, O_DELETE, O_HELP,
};

static const struct option long_opts[] = {
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "port", required_argument, NULL, O_PORT },
	{ "port-file", required_argument, NULL, O_PORT_FILE },
	{ "project", required_argument, NULL, O_PROJECT },
	{ "project-number", required_argument, NULL, O_PROJECT_NUMBER },
	{ "discovery", required_argument, NULL, O_DISCOVERY },
	{ "latency-ms", required_argument, NULL, O_LATENCY },
	{ "op-seconds", required_argument, NULL, O_OP_SECONDS },
	{ "page-size", required_argument, NULL, O_PAGE_SIZE },
	{ "quota", required_argument, NULL, O_QUOTA },
	{ "capacity", required_argument, NULL, O_CAPACITY },
	{ "zone-fault", required_argument, NULL, O_ZONE_FAULT },
	{ "fault-rate", required_argument, NULL, O_FAULT_RATE },
	{ "fault-kinds", required_argument, NULL, O_FAULT_KINDS },
	{ "seed", required_argument, NULL, O_SEED },
	{ "auth", required_argument, NULL, O_AUTH },
	{ "sa-public-key", required_argument, NULL, O_SA_KEY },
	{ "sa-email", required_argument, NULL, O_SA_EMAIL },
	{ "authorized-user", required_argument, NULL, O_USER },
	{ "token-ttl", required_argument, NULL, O_TOKEN_TTL },
	{ "worker-ip-base", required_argument, NULL, O_IP_BASE },
	{ "worker-port", required_argument, NULL, O_WORKER_PORT },
	{ "external-ips", no_argument, NULL, O_EXTERNAL_IPS },
	{ "accelerator-type", required_argument, NULL, O_ACCEL },
	{ "log", required_argument, NULL, O_LOG },
	{ "verbose", no_argument, NULL, O_VERBOSE },
	{ "wif-audience", required_argument, NULL, O_WIF_AUD },
	{ "wif-subject-token", required_argument, NULL, O_WIF_TOKEN },
	{ "oidc-request-token", required_argument, NULL, O_OIDC_TOKEN },
	{ "impersonate-sa", required_argument, NULL, O_IMP_SA },
	{ "impersonate-caller", required_argument, NULL, O_IMP_CALLER },
	{ "require-user-project", required_argument, NULL, O_USER_PROJECT },
	{ "worker-dir", required_argument, NULL, O_WORKER_DIR },
	{ "worker-user", required_argument, NULL, O_WORKER_USER },
	{ "project-metadata", required_argument, NULL, O_PROJECT_MD },
	{ "oslogin-username", required_argument, NULL, O_OSLOGIN_USER },
	{ "token-email", required_argument, NULL, O_TOKEN_EMAIL },
	{ "bucket", required_argument, NULL, O_BUCKET },
	{ "compute-schema", required_argument, NULL, O_CE_SCHEMA },
	{ "compute-stage-seconds", required_argument, NULL, O_CE_STAGE },
	{ "compute-wait-seconds", required_argument, NULL, O_CE_WAIT },
	{ "delete-seconds", required_argument, NULL, O_DELETE },
	{ "billing-api-key", required_argument, NULL, O_BILLING_KEY },
	{ "billing-disabled", no_argument, NULL, O_BILLING_OFF },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

static int die_usage(const char *opt, const char *val, const char *expected)
{
	fprintf(stderr, "fakegcp: invalid value '%s' for --%s: expected %s\n", val, opt, expected);
	return 2;
}

static int parse_double(const char *s, double min, double max, double *out)
{
	char *end;

	*out = strtod(s, &end);
	return *s && !*end && *out >= min && *out <= max ? 0 : -1;
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;

	*out = strtol(s, &end, 10);
	return *s && !*end && *out >= min && *out <= max ? 0 : -1;
}

/* A data file next to the executable, when the default relative path
 * does not exist (tests run from other directories). */
static char *near_exe(const char *file)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	return xasprintf("%s/%s", exe, file);
}

static int parse_args(int argc, char **argv, const char **fault_kinds, double *fault_rate,
		      int *seeded)
{
	int c;
	long l;
	char err[512];
	struct in_addr a;

	while ((c = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		const char *name = c >= O_LISTEN && c <= O_HELP ? long_opts[c - O_LISTEN].name : "";
		switch (c) {
		case O_LISTEN: fg_opt.listen = optarg; break;
		case O_PORT:
			if (parse_int(optarg, 0, 65535, &l) < 0)
				return die_usage(name, optarg, "a port number 0..65535");
			fg_opt.port = (int)l;
			break;
		case O_PORT_FILE: fg_opt.port_file = optarg; break;
		case O_PROJECT: fg_opt.project = optarg; break;
		case O_PROJECT_NUMBER: fg_opt.project_number = optarg; break;
		case O_DISCOVERY: fg_opt.discovery = optarg; break;
		case O_LATENCY:
			if (parse_double(optarg, 0, 600000, &fg_opt.latency_ms) < 0)
				return die_usage(name, optarg, "milliseconds >= 0");
			break;
		case O_OP_SECONDS:
			if (parse_double(optarg, 0, 86400, &fg_opt.op_seconds) < 0)
				return die_usage(name, optarg, "seconds >= 0");
			break;
		case O_PAGE_SIZE:
			if (parse_int(optarg, 1, 100000, &l) < 0)
				return die_usage(name, optarg, "a number >= 1");
			fg_opt.page_size = (int)l;
			break;
		case O_QUOTA:
			if (fg_quota_parse(optarg) < 0)
				return die_usage(name, optarg, "ZONE:TYPE:SCHED=N with SCHED one of "
								 "preemptible, spot, on-demand");
			break;
		case O_CAPACITY:
			if (fg_capacity_parse(optarg) < 0)
				return die_usage(name, optarg, "ZONE=N");
			break;
		case O_ZONE_FAULT:
			if (fg_zone_fault_parse(optarg) < 0)
				return die_usage(name, optarg, "ZONE=unauthorized or ZONE=preempted");
			break;
		case O_FAULT_RATE:
			if (parse_double(optarg, 0, 1, fault_rate) < 0)
				return die_usage(name, optarg, "a fraction 0..1");
			break;
		case O_FAULT_KINDS: *fault_kinds = optarg; break;
		case O_SEED:
			fg_opt.seed = strtoull(optarg, NULL, 10);
			*seeded = 1;
			break;
		case O_AUTH:
			if (strcmp(optarg, "none") && strcmp(optarg, "token"))
				return die_usage(name, optarg, "none or token");
			fg_opt.auth_token = !strcmp(optarg, "token");
			break;
		case O_SA_KEY:
			if (fg_token_add_key(optarg, err, sizeof(err)) < 0) {
				fprintf(stderr, "fakegcp: --sa-public-key: %s\n", err);
				return 2;
			}
			break;
		case O_SA_EMAIL: fg_opt.sa_email = optarg; break;
		case O_USER:
			if (fg_token_add_user(optarg) < 0)
				return die_usage(name, optarg, "CLIENT_ID:CLIENT_SECRET:REFRESH_TOKEN");
			break;
		case O_TOKEN_TTL:
			if (parse_double(optarg, 1, 86400, &fg_opt.token_ttl) < 0)
				return die_usage(name, optarg, "seconds 1..86400");
			break;
		case O_IP_BASE:
			if (inet_pton(AF_INET, optarg, &a) != 1)
				return die_usage(name, optarg, "an IPv4 address");
			fg_opt.worker_ip_base = ntohl(a.s_addr);
			break;
		case O_WORKER_PORT:
			if (parse_int(optarg, 1, 65535, &l) < 0)
				return die_usage(name, optarg, "a port number 1..65535");
			fg_opt.worker_port = (int)l;
			break;
		case O_EXTERNAL_IPS: fg_opt.external_ips = 1; break;
		case O_ACCEL:
			if (!fg_type_workers(optarg))
				return die_usage(name, optarg, "an accelerator type such as v4-64");
			fg_catalog_add_type(optarg);
			break;
		case O_LOG: fg_opt.log_path = optarg; break;
		case O_VERBOSE: fg_opt.verbose = 1; break;
		case O_WIF_AUD: fg_opt.wif_audience = optarg; break;
		case O_WIF_TOKEN: fg_opt.wif_subject_token = optarg; break;
		case O_OIDC_TOKEN: fg_opt.oidc_request_token = optarg; break;
		case O_IMP_SA: fg_opt.impersonate_sa = optarg; break;
		case O_IMP_CALLER:
			if (strcmp(optarg, "any") && strcmp(optarg, "sts"))
				return die_usage(name, optarg, "any or sts");
			fg_opt.impersonate_sts_only = !strcmp(optarg, "sts");
			break;
		case O_USER_PROJECT: fg_opt.require_user_project = optarg; break;
		case O_BILLING_KEY: fg_opt.billing_key = optarg; break;
		case O_BILLING_OFF: fg_opt.billing_disabled = 1; break;
		case O_WORKER_DIR: fg_opt.worker_dir = optarg; break;
		case O_WORKER_USER: fg_opt.worker_user = optarg; break;
		case O_PROJECT_MD:
			if (fg_project_metadata_add(optarg) < 0)
				return die_usage(name, optarg, "KEY=VALUE");
			break;
		case O_OSLOGIN_USER: fg_opt.oslogin_username = optarg; break;
		case O_TOKEN_EMAIL: fg_opt.token_email = optarg; break;
		case O_BUCKET:
			if (fg_gcs_bucket_option(optarg) < 0)
				return die_usage(name, optarg, "a bucket name: 3-63 of a-z, 0-9, "
								 "'-', '_', '.'");
			break;
		case O_CE_SCHEMA: fg_opt.compute_schema = optarg; break;
		case O_CE_STAGE:
			if (parse_double(optarg, 0, 86400, &fg_opt.compute_stage_s) < 0)
				return die_usage(name, optarg, "seconds >= 0");
			break;
		case O_CE_WAIT:
			if (parse_double(optarg, 0, 86400, &fg_opt.compute_wait_s) < 0)
				return die_usage(name, optarg, "seconds >= 0");
			break;
		case O_DELETE:
			if (parse_double(optarg, 0, 86400, &fg_opt.delete_s) < 0)
				return die_usage(name, optarg, "seconds >= 0");
			break;
		case O_HELP: fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "fakegcp: unexpected argument '%s'\n%s", argv[optind], usage);
		return 2;
	}
	return -1;
}

static void free_all(void)
{
	fg_ops_free();
	fg_qrs_free();
	fg_world_free();
	fg_limits_free();
	fg_zone_faults_free();
	fg_catalog_free();
	fg_monitoring_free();
	fg_token_free();
	fg_account_free();
	fg_gcs_free();
	fg_compute_free();
	fg_reqlog_close();
	fg_discovery_free();
}

static int write_port_file(const char *path, int port)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	char buf[16];
	int n = snprintf(buf, sizeof(buf), "%d\n", port);
	int rc = tpf_write_file_atomic(path, buf, (size_t)n, 0644, &d);

	for (size_t i = 0; i < d.n; i++)
		fprintf(stderr, "fakegcp: %s\n", d.items[i].summary);
	tpf_diags_release(&d);
	return rc;
}

static void on_signal(int sig)
{
	(void)sig; /* blocked in every thread; sigwait() takes it instead */
}

int main(int argc, char **argv)
{
	const char *fault_kinds = "429,500,503";
	double fault_rate = 0, t0 = fg_mono();
	int seeded = 0, rc, port, sig;
	char err[512], *near = NULL, *near_ce = NULL;
	sigset_t set;

	fg_opt = (struct fg_opts){
		.listen = "127.0.0.1", .project = "test-project", .discovery = NULL,
		.op_seconds = 0.2, .page_size = 1000, .token_ttl = 3600,
		.worker_ip_base = (127u << 24) | (10u << 8) | 1u, .worker_port = 22,
		.project_number = "123456789012", .worker_user = "root",
		.token_email = "tester@example.com", .compute_stage_s = -1, .compute_wait_s = 120,
		.delete_s = -1,
	};
	rc = parse_args(argc, argv, &fault_kinds, &fault_rate, &seeded);
	if (rc >= 0) {
		free_all();
		return rc;
	}
	rc = 1;
	if (fg_faults_set(fault_rate, fault_kinds) < 0) {
		rc = die_usage("fault-kinds", fault_kinds, "a comma list of 429, 500, 502, 503, "
							   "504, drop, slow");
		goto done;
	}
	if (!seeded)
		fg_opt.seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	fg_faults_seed(fg_opt.seed);
	fg_world_init(fg_opt.seed);

	/* A shell starts background jobs with SIGINT ignored, and an ignored
	 * signal never reaches sigwait(); give them a handler that never runs. */
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGUSR1, on_signal);
	/* Every thread inherits this mask, so only sigwait() below sees them. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!fg_opt.discovery) {
		fg_opt.discovery = DEFAULT_DISCOVERY;
		if (access(fg_opt.discovery, R_OK) && (near = near_exe("tpu.v2.discovery.json")))
			fg_opt.discovery = near;
	}
	if (!fg_opt.compute_schema) {
		fg_opt.compute_schema = DEFAULT_COMPUTE_SCHEMA;
		if (access(fg_opt.compute_schema, R_OK) && (near_ce = near_exe("compute.v1.schema.json")))
			fg_opt.compute_schema = near_ce;
	}
	if (fg_discovery_load(fg_opt.discovery, err, sizeof(err)) < 0 ||
	    fg_compute_init(fg_opt.compute_schema, err, sizeof(err)) < 0 ||
	    fg_reqlog_open(fg_opt.log_path, err, sizeof(err)) < 0 ||
	    fg_server_start(fg_opt.listen, fg_opt.port, &port, err, sizeof(err)) < 0) {
		fprintf(stderr, "fakegcp: %s\n", err);
		goto done;
	}
	if (fg_opt.port_file && write_port_file(fg_opt.port_file, port) < 0) {
		fg_server_stop();
		goto done;
	}
	fprintf(stderr, "fakegcp: listening on http://%s:%d (project %s) after %.1f ms\n",
		fg_opt.listen, port, fg_opt.project, (fg_mono() - t0) * 1000.0);
	sigwait(&set, &sig);
	fg_stop_sleepers();
	fg_server_stop();
	rc = 0;
done:
	free_all();
	free(near);
	free(near_ce);
	return rc;
}
