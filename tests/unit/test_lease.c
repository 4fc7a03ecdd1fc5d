/*
 * The leader lease of watch (state/lease.h) against the in-memory Cloud
 * Storage stand-in (tests/unit/gcs_fake.h): acquire, stand by, renew,
 * expiry on the local monotonic clock, takeover, the 412 of a lost lease,
 * the fence on state saves (state/backend.h tpf_backend_set_fence), the
 * state rewrite that fences an old leader out, the dead leader's lock ID,
 * release.
 */
#include "state/backend.h"
#include "state/lease.h"
#include "tests/unit/gcs_fake.h"
#include "tests/unit/unit.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <stdlib.h>
#include <string.h>

static struct gcs_fake fake;

/* Each test has a fleet of its own, so leases left by one do not meet the next. */
static const char *fleet = "f";

static void config(struct tpf_backend_gcs_config *c)
{
	memset(c, 0, sizeof(*c));
	c->bucket = "bkt";
	c->prefix = "team/";
	c->fleet = fleet;
	c->gcs.endpoint = fake.url;
}

static struct tpf_lease *lease(double ttl)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_backend_gcs_config c;
	config(&c);
	struct tpf_lease *l = NULL;
	CHECK_INT(tpf_lease_open(&l, &c, ttl, &d), 0);
	tpf_diags_release(&d);
	return l;
}

static long long gen_of(const char *name)
{
	pthread_mutex_lock(&fake.mu);
	struct gcs_fake_obj *o = gcs_fake_find(&fake, name);
	long long g = o ? o->generation : 0;
	pthread_mutex_unlock(&fake.mu);
	return g;
}

static int fence(void *ctx, struct tpf_diags *d)
{
	return tpf_lease_held(ctx, d);
}

static void test_lease__acquire_standby_expire_takeover(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_lease *a = lease(0.4), *b = lease(0.4);
	struct tpf_lease_view v;
	CHECK_STR(tpf_lease_where(a), "gs://bkt/team/f.tfleader");
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK(v.leading && v.changed);
	long long g1 = v.generation;
	CHECK(g1 > 0 && g1 == gen_of("team/f.tfleader"));
	CHECK_INT(tpf_lease_held(a, &d), 0);
	/* b sees a live lease: it stands by and names the holder */
	CHECK_INT(tpf_lease_step(b, &v, &d), 0);
	CHECK(!v.leading && !v.changed);
	CHECK_INT(v.generation, g1);
	CHECK(strstr(v.holder, " pid ") != NULL);
	CHECK(v.expires_in > 0.2 && v.expires_in <= 0.4);
	/* a renews: a new generation, which b watches afresh */
	tpf_sleep(0.25);
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK(v.leading && !v.changed && v.generation > g1);
	long long g2 = v.generation;
	tpf_sleep(0.25); /* 0.5 s after b first looked, but g2 is new to it */
	CHECK_INT(tpf_lease_step(b, &v, &d), 0);
	CHECK(!v.leading);
	CHECK_INT(v.generation, g2);
	/* a stops renewing: b takes over once g2 stayed a TTL */
	tpf_sleep(0.45);
	CHECK_INT(tpf_lease_step(b, &v, &d), 0);
	CHECK(v.leading && v.changed);
	CHECK(v.generation > g2);
	/* a's own expiry has passed too, so it knows without asking */
	CHECK_INT(tpf_lease_held(a, &d), TPF_ESTALE);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "does not hold the leader lease"));
	tpf_diags_release(&d);
	/* and its next step stands by, naming b */
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK(!v.leading);
	tpf_lease_free(a);
	tpf_lease_free(b);
	CHECK_INT(d.n, 0);
}

static void test_lease__stolen_lease_and_fence(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	fleet = "g";
	struct tpf_lease *a = lease(30);
	struct tpf_lease_view v;
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK(v.leading);
	struct tpf_backend_gcs_config c;
	config(&c);
	struct tpf_backend *be = NULL;
	CHECK_INT(tpf_backend_open_gcs(&be, &c, &d), 0);
	tpf_backend_set_fence(be, fence, a);
	struct tpf_state st;
	CHECK_INT(tpf_backend_load(be, &st, &d), 0);
	xstrset(&st.fleet, "g");
	tpf_state_add(&st, "g-a-0");
	CHECK_INT(tpf_state_save(&st, &d), 0); /* leading: written */
	long long sgen = gen_of("team/g.tfstate");
	CHECK(sgen > 0);
	/* someone else writes the lease (no precondition) */
	pthread_mutex_lock(&fake.mu);
	gcs_fake_find(&fake, "team/g.tfleader")->generation = ++fake.next_gen;
	pthread_mutex_unlock(&fake.mu);
	tpf_state_add(&st, "g-a-1");
	CHECK_INT(tpf_state_save(&st, &d), TPF_ESTALE);
	CHECK(d.n == 1 && strstr(d.items[0].summary, "lost the leader lease"));
	CHECK_INT(gen_of("team/g.tfstate"), sgen); /* nothing written */
	tpf_diags_release(&d);
	/* the fence already counted it lost: its next step stands by, on the
	 * intruder's generation */
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK(!v.leading);
	CHECK_INT(v.generation, gen_of("team/g.tfleader"));
	tpf_state_release(&st);
	tpf_backend_free(be);
	tpf_lease_free(a);
	CHECK_INT(d.n, 0);
}

static void test_lease__takeover_fences_state_and_names_lock(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	fleet = "h";
	struct tpf_lease *a = lease(0.2), *b = lease(0.2);
	struct tpf_lease_view v;
	CHECK_INT(tpf_lease_step(a, &v, &d), 0);
	CHECK_INT(tpf_lease_note_lock(a, "11111111-2222-4333-8444-555555555555", 1, &d), 0);
	CHECK_INT(tpf_lease_step(b, &v, &d), 0);
	CHECK(!v.leading);
	tpf_sleep(0.3);
	CHECK_INT(tpf_lease_step(b, &v, &d), 0);
	CHECK(v.leading && v.changed);
	CHECK_STR(v.previous_lock_id, "11111111-2222-4333-8444-555555555555");
	/* no state yet: nothing to rewrite */
	CHECK_INT(tpf_lease_fence_state(b, &d), 0);
	CHECK_INT(gen_of("team/h.tfstate"), 0);
	/* an old leader's state, read before the takeover */
	struct tpf_backend_gcs_config c;
	config(&c);
	struct tpf_backend *old = NULL;
	struct tpf_state st;
	CHECK_INT(tpf_backend_open_gcs(&old, &c, &d), 0);
	CHECK_INT(tpf_backend_load(old, &st, &d), 0);
	xstrset(&st.fleet, "h");
	tpf_state_add(&st, "h-a-0");
	CHECK_INT(tpf_state_save(&st, &d), 0);
	long long g = gen_of("team/h.tfstate");
	pthread_mutex_lock(&fake.mu);
	size_t len = gcs_fake_find(&fake, "team/h.tfstate")->data.len;
	pthread_mutex_unlock(&fake.mu);
	CHECK_INT(tpf_lease_fence_state(b, &d), 0);
	CHECK(gen_of("team/h.tfstate") > g); /* a new generation, */
	pthread_mutex_lock(&fake.mu);
	CHECK_INT(gcs_fake_find(&fake, "team/h.tfstate")->data.len, len); /* the same bytes */
	pthread_mutex_unlock(&fake.mu);
	/* so the old leader's next write is refused by the compare-and-swap */
	tpf_state_add(&st, "h-a-1");
	CHECK_INT(tpf_state_save(&st, &d), TPF_ESTALE);
	tpf_diags_release(&d);
	unlink(TPF_ERRORED_STATE);
	/* a clean exit deletes the lease */
	tpf_lease_release(b);
	CHECK_INT(gen_of("team/h.tfleader"), 0);
	tpf_state_release(&st);
	tpf_backend_free(old);
	tpf_lease_free(a);
	tpf_lease_free(b);
}

static void test_lease__bad_ttl(void)
{
	struct tpf_diags d = TPF_DIAGS_INIT;
	struct tpf_backend_gcs_config c;
	config(&c);
	struct tpf_lease *l = NULL;
	CHECK_INT(tpf_lease_open(&l, &c, 0, &d), TPF_ERROR);
	CHECK(l == NULL && d.n == 1 && strstr(d.items[0].summary, "lease TTL must be positive"));
	tpf_diags_release(&d);
}

int main(void)
{
	setenv("TPUFORM_ACCESS_TOKEN", "test-token", 1);
	setenv("TPUFORM_GCP_RETRY_BASE", "0.01", 1);
	setenv("TPUFORM_GCP_TRIES", "3", 1);
	RUN(test_lease__bad_ttl);
	if (gcs_fake_start(&fake)) {
		printf("# SKIP the lease tests: cannot start the Cloud Storage stand-in\n");
		return unit_done();
	}
	RUN(test_lease__acquire_standby_expire_takeover);
	RUN(test_lease__stolen_lease_and_fence);
	RUN(test_lease__takeover_fences_state_and_names_lock);
	gcs_fake_stop(&fake);
	return unit_done();
}
