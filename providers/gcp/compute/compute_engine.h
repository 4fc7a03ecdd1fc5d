/*
 * TPU VMs on Compute Engine (issue 18): the second API of the gcp
 * provider, as thin resource files over the one Google REST client
 * (google/gapi.h), sharing the Cloud TPU client's credentials, settings and
 * interrupt flag (providers/gcp/gcp_client_internal.h).
 *
 * Contract: Compute Engine API v1 (https://cloud.google.com/compute/docs/reference/rest/v1),
 * resources instances (insert, delete, list, get, setMetadata, setLabels,
 * getGuestAttributes) and zoneOperations.wait; field names as the
 * reference spells them; request bodies follow the requests gcloud 528
 * sends (docs/compute-engine.md "Provider", which cites the reference
 * sections and captures each choice follows).
 *
 * URLs: <root>/compute/v1/projects/<project>/..., root from
 * $TPUFORM_COMPUTE_ENDPOINT, else https://compute.googleapis.com, under the
 * endpoint policy of google/gcp_endpoint.h (https, or http to loopback).
 *
 * Not for use outside providers/gcp/.
 */
#ifndef TPF_GCP_COMPUTE_H
#define TPF_GCP_COMPUTE_H

#include <jansson.h>
#include "model/live.h"
#include "model/recipe.h"
#include "providers/gcp/gcp_client.h"
#include "providers/gcp/gcp_fields.h"
#include "providers/provider.h"
#include "util/diag.h"

struct tpf_compute_client;

/*
 * A Compute Engine client over Cloud TPU client c (borrowed; must outlive
 * it): resolves the endpoint now. 0 and *out (free with
 * tpf_compute_client_free), or TPF_ERROR with a diagnostic (a bad
 * TPUFORM_COMPUTE_ENDPOINT).
 */
int tpf_compute_client_open(struct tpf_compute_client **out, struct tpf_gcp_client *c,
			    struct tpf_diags *d);
void tpf_compute_client_free(struct tpf_compute_client *cc);

/* ---- bodies and parsing (providers/gcp/compute_body.c; pure) ---- */

/*
 * The instances.insert body for node `name` from recipe r
 * (docs/compute-engine.md "The instance body"; new reference):
 * name; machineType "zones/Z/machineTypes/MT"; disks[0] the boot disk
 * {boot, autoDelete, type PERSISTENT, mode READ_WRITE, initializeParams
 * {sourceImage, diskSizeGb (string, int64), diskType "zones/Z/diskTypes/T"}}
 * then data disks {source, mode, autoDelete false}; networkInterfaces[0]
 * {network "global/networks/N" (default "default"), subnetwork
 * "regions/R/subnetworks/S", accessConfigs [{type ONE_TO_ONE_NAT, name
 * external-nat}] when the node gets an external address (declared
 * enable_external_ips, else `external_ips`)}; canIpForward when declared;
 * scheduling {onHostMaintenance TERMINATE, automaticRestart (false for SPOT
 * and FLEX_START), provisioningModel STANDARD|SPOT|FLEX_START, preemptible
 * true for SPOT, instanceTerminationAction (SPOT: the recipe's; FLEX_START:
 * DELETE), maxRunDuration {seconds (string)}}; reservationAffinity
 * NO_RESERVATION for FLEX_START, SPECIFIC_RESERVATION
 * {key compute.googleapis.com/reservation-name, values [R]} for a
 * reservation; serviceAccounts [{email (default "default"), scopes
 * (default cloud-platform)}]; labels (every label of r, lineage included);
 * metadata {items: [{key, value}]} from `metadata` (an object of strings,
 * may be NULL) with enable-guest-attributes=TRUE added;
 * shieldedInstanceConfig {enableSecureBoot} when declared; tags {items}.
 */
json_t *tpf_compute_instance_body(const char *name, const struct tpf_recipe *r, json_t *metadata,
				  int external_ips);

/*
 * Compute Engine Instance.status -> the live node's state (model/live.h
 * speaks Cloud TPU Node.state; model/node_state.c classifies it), for an
 * instance a compute.instances.preempted operation names when preempted
 * (docs/compute-engine.md "States" and "Preemption"):
 *   PENDING, PROVISIONING, STAGING -> CREATING; RUNNING -> READY;
 *   REPAIRING -> REPAIRING; DEPROVISIONING -> DELETING;
 *   STOPPING, PENDING_STOP, SUSPENDING, STOPPED, SUSPENDED, TERMINATED ->
 *   PREEMPTED when preempted, else STOPPED (STOPPING, PENDING_STOP,
 *   SUSPENDING: STOPPING), TERMINATED (TERMINATED);
 *   anything else: the status itself (an unknown class: nothing acts on it).
 * Static string.
 */
const char *tpf_compute_state(const char *status, int preempted);

/*
 * Every preemption Compute Engine recorded, in one walk of
 * aggregated/operations (filter operationType = "compute.instances.preempted",
 * returnPartialSuccess=true; every page): the DONE operations whose
 * targetLink is the preempted instance (docs/compute-engine.md
 * "Preemption"; the compute-preemptible-history sample). *out a new object:
 * "id:<targetId>" and "name:<zone>/<instance>" -> the latest insertTime.
 * 0, or an error with a diagnostic (the caller may go on without: a loss
 * is then not called a preemption).
 */
int tpf_compute_list_preempted(struct tpf_compute_client *cc, json_t **out, struct tpf_diags *d);

/* A lost (dead) instance n that `preempted` (tpf_compute_list_preempted;
 * NULL: none) names by id becomes PREEMPTED. */
void tpf_compute_mark_preempted(struct tpf_live_node *n, json_t *preempted);

/* 1 when `preempted` names an instance of zone whose name is a slice
 * member's ("<slice>-" then digits) preempted at or after `since` (RFC
 * 3339, the MIG's creation; NULL: any time). */
int tpf_compute_member_preempted(json_t *preempted, const char *zone, const char *slice,
				 const char *since);

/*
 * An Instance object into *out (released first): name, id, state
 * (tpf_compute_state), create_time (creationTimestamp), zone (last segment
 * of Instance.zone, else `zone`), recipe.compute {api compute,
 * machine_type (last segment), flex_start, termination_action (SPOT),
 * max_run_duration}, spot, labels, node fields (network and subnetwork as
 * their last segments, enable_external_ips from accessConfigs, tags,
 * service account, metadata without tpuform's enable-guest-attributes,
 * shielded secure boot, reservation), topology the machine type's own,
 * workers 1, one endpoint {networkInterfaces[0].networkIP,
 * accessConfigs[0].natIP, ssh_port}. 0, or -1 when inst has no name.
 */
int tpf_compute_instance_parse(json_t *inst, const char *zone, int ssh_port,
			       struct tpf_live_node *out);

/*
 * Every field of an Instance tpuform reads, as a partial response asks for
 * them (the `fields` system parameter,
 * https://cloud.google.com/apis/docs/system-parameters): what
 * tpf_compute_instance_parse and its helpers read, the fleet label
 * list_page matches, and what compute_api.c tells the SSH access layer
 * (seen: name, id, metadata items). instances.list and instances.get ask
 * for these. Reading a new field means adding it here:
 * tests/unit/test_gcp_fields.c fails otherwise. shieldedInstanceConfig is
 * asked whole: its presence is read.
 */
#define TPF_COMPUTE_INSTANCE_FIELDS                                                       \
	"name,id,creationTimestamp,zone,machineType,status,labels,canIpForward,"           \
	"scheduling(provisioningModel,preemptible,instanceTerminationAction,maxRunDuration)," \
	"networkInterfaces(network,subnetwork,networkIP,accessConfigs/natIP),tags/items,"   \
	"serviceAccounts(email,scopes),metadata/items,shieldedInstanceConfig,"              \
	"reservationAffinity(consumeReservationType,values),"                               \
	"resourceStatus/upcomingMaintenance(" TPF_GCP_MAINTENANCE_FIELDS ")"


/* "us-central1" of "us-central1-c" (caller frees). */
char *tpf_compute_region(const char *zone);

/* ---- resources (providers/gcp/compute_api.c) ---- */

/*
 * Create single-host node `name` as one instance in r->zone:
 * instances.insert with requestId (the same on every retry, so a retried
 * request never makes a second VM), wait for the zone operation through
 * .../wait, then instances.get into *out until it is RUNNING (READY), at
 * most the client's op_timeout (then CREATING as it is: the operation is
 * DONE before a TPU VM runs, docs/compute-engine.md section 5). Errors:
 * the instance lost (TERMINATED, preempted) before it ran: TPF_ERROR;
 * a flex-start instance is not waited for: its insert operation stays
 * RUNNING while it waits PENDING for capacity (docs/compute-engine.md
 * section 3), so *out is the instance at once, capacity_wait set; TPF_ECAPACITY
 * (ZONE_RESOURCE_POOL_EXHAUSTED[_WITH_DETAILS] in the operation),
 * TPF_EQUOTA (403 quotaExceeded, or QUOTA_EXCEEDED in the operation),
 * TPF_EINTERRUPTED, TPF_ERROR (also, before any request, for a recipe of
 * more than one VM: multi-host slices are MIGs, not made yet); each but the interrupt with a diagnostic
 * quoting the API's message and status.
 */
int tpf_compute_create(struct tpf_compute_client *cc, const char *name,
		       const struct tpf_recipe *r, json_t *metadata, struct tpf_live_node *out,
		       struct tpf_diags *d);

/* instances.delete of `name` in `zone` and wait; gone already is 0. With
 * a guard, the instance is read first (instances.get: instances.delete
 * has no precondition) and a refusal of tpf_delete_check is TPF_EFOREIGN,
 * nothing deleted. */
int tpf_compute_delete(struct tpf_compute_client *cc, const char *zone, const char *name,
		       const struct tpf_delete_guard *guard, struct tpf_diags *d);

/*
 * Every instance of `zone` labelled tpuform-fleet=fleet, appended to out
 * (instances.list, every page; labels are matched here, as gcloud 528 does:
 * it never sends label terms to the server, reference section 5.3);
 * members of a slice (label tpuform-slice) go to `members` instead (NULL:
 * dropped), in the order listed. A lost instance that `preempted`
 * (tpf_compute_list_preempted, may be NULL) names is PREEMPTED.
 * 0, or an error with a diagnostic; a zone the project cannot use is
 * recorded in out->unlisted_zones, not an error.
 */
int tpf_compute_list(struct tpf_compute_client *cc, const char *zone, const char *fleet,
		     json_t *preempted, struct tpf_live_set *out, struct tpf_live_set *members,
		     struct tpf_diags *d);

/* instances.get into *out; TPF_ENOTFOUND without a diagnostic. */
int tpf_compute_get(struct tpf_compute_client *cc, const char *zone, const char *name,
		    struct tpf_live_node *out, struct tpf_diags *d);

/* instances.setLabels with the instance's labelFingerprint (read first),
 * retried on 412 conditionNotMet; wait for the operation. */
int tpf_compute_set_labels(struct tpf_compute_client *cc, const char *zone, const char *name,
			   const struct tpf_kvlist *labels, struct tpf_diags *d);

/*
 * Read-modify-write of the instance's metadata (instances.get, then
 * instances.setMetadata {fingerprint, items}): edit(items, ctx) changes
 * the object of strings it is given (key -> value) and returns 1 to write,
 * 0 when nothing is to change, or < 0 to stop with its own diagnostic. A
 * 412 conditionNotMet (someone wrote between our read and write) reads
 * again and retries, at most 5 times. Waits for the operation.
 */
int tpf_compute_edit_metadata(struct tpf_compute_client *cc, const char *zone, const char *name,
			      int (*edit)(json_t *items, void *ctx), void *ctx,
			      struct tpf_diags *d);

/*
 * getGuestAttributes queryPath=hostkeys/ as the API answers it (*out a new
 * object; {} when none are published yet: "not found"). 0, or an error
 * with a diagnostic.
 */
int tpf_compute_guest_attributes(struct tpf_compute_client *cc, const char *zone,
				 const char *name, json_t **out, struct tpf_diags *d);

/*
 * The host keys an instance publishes (getGuestAttributes
 * queryPath=hostkeys/): *out a new array of "TYPE BASE64" strings, empty
 * when none are published yet ("not found"). 0, or an error with a
 * diagnostic.
 */
int tpf_compute_host_keys(struct tpf_compute_client *cc, const char *zone, const char *name,
			  json_t **out, struct tpf_diags *d);

/* ---- multi-host slices as MIGs (providers/gcp/compute_mig.c) ---- */

/* The label every member of slice N carries (value N). */
#define TPF_COMPUTE_SLICE_LABEL "tpuform-slice"

/* "<node>-<suffix>": the names of a slice's parts (caller frees): the
 * template "t", the workload policy "wp". */
char *tpf_compute_slice_part(const char *node, const char *suffix);
/* The MIG's description: a JSON object of r's labels, tpuform-slice,
 * topology, machine_type and the provisioning (flex_start, spot,
 * max_run_duration when set), which a slice with no member yet reports
 * from (caller frees). */
char *tpf_compute_mig_description(const char *name, const struct tpf_recipe *r);
/* instanceTemplates.insert body: {name N-t, properties: the instance body
 * with the bare machine type and disk type and the tpuform-slice label}. */
json_t *tpf_compute_template_body(const char *name, const struct tpf_recipe *r, json_t *metadata,
				  int external_ips);
/* instanceGroupManagers.insert body (reference section 4.1): name N,
 * description, baseInstanceName "N-###", instanceTemplate and
 * resourcePolicies.workloadPolicy as partial URLs, targetSize r->workers,
 * targetSizePolicy.mode BULK, instanceLifecyclePolicy.defaultActionOnFailure
 * DO_NOTHING, updatePolicy.type OPPORTUNISTIC. */
json_t *tpf_compute_mig_body(const char *name, const struct tpf_recipe *r, const char *project);

/* The parts of a slice, as bits (providers/gcp/compute_slice_parts.c). */
#define TPF_SLICE_TEMPLATE 1u /* instance template N-t (global) */
#define TPF_SLICE_POLICY 2u   /* workload policy N-wp (regional) */
#define TPF_SLICE_MIG 4u      /* the MIG N (zonal) */
#define TPF_SLICE_ALL 7u

/*
 * Create slice N: the template, the workload policy (regions/R,
 * {type HIGH_THROUGHPUT, acceleratorTopology r->node.topology},
 * description tpf_compute_policy_description) and the MIG, each with a
 * requestId and its operation waited for. A part that already exists
 * (409) is reused when it carries r's tpuform-lineage (an apply that
 * stopped half-way made it), else the create stops with TPF_EFOREIGN and a
 * diagnostic naming the part and its lineage, leaving it as it is.
 * *ours: the TPF_SLICE_* bits of the parts that are this state's now,
 * made by this call or reused as ours (set on every return; never a part
 * it refused). 0, or the failing step's code with its diagnostic; the
 * parts stay: the caller's undo deletes exactly *ours with
 * tpf_compute_delete_slice (docs/compute-engine.md "Undo and ownership of
 * a slice's parts").
 */
int tpf_compute_create_slice(struct tpf_compute_client *cc, const char *name,
			     const struct tpf_recipe *r, json_t *metadata, unsigned *ours,
			     struct tpf_diags *d);
/* A workload policy's description (a resource policy has no labels):
 * JSON {tpuform-fleet, tpuform-lineage (r's labels), tpuform-slice}
 * (caller frees). */
char *tpf_compute_policy_description(const char *slice, const struct tpf_recipe *r);
/* The tpuform-lineage a slice part records: properties.labels of a
 * template, else the JSON of its description (a MIG, a policy); NULL when
 * none (caller frees). */
char *tpf_compute_part_lineage(json_t *part);
/*
 * Wait for slice N to be READY (MIG stable, every member RUNNING, the
 * applied topology ACTIVE), at most the client's op_timeout (then *out is
 * the slice as it is), or return at once for flex-start (it waits for
 * capacity in CREATING). A BULK capacity check that failed is its class's
 * code (TPF_ECAPACITY, TPF_EQUOTA) with the API's message.
 */
int tpf_compute_wait_slice(struct tpf_compute_client *cc, const char *name,
			   const struct tpf_recipe *r, struct tpf_live_node *out,
			   struct tpf_diags *d);
/* Slice N as it is now (its MIG, and its members from the zone's
 * instances.list), into *out; TPF_ENOTFOUND without a diagnostic when the
 * MIG does not exist. */
int tpf_compute_read_slice(struct tpf_compute_client *cc, const char *name,
			   const struct tpf_recipe *r, struct tpf_live_node *out,
			   struct tpf_diags *d);
/*
 * Delete the parts `which` (TPF_SLICE_* bits) of slice N in `zone`: MIG N
 * (and its members), template N-t, policy N-wp, in that order, each waited
 * for; parts already gone are skipped. With a guard, each part is read
 * just before its delete (no delete method takes a precondition): a MIG
 * that tpf_delete_check refuses stops the delete with TPF_EFOREIGN and
 * nothing deleted; a template or policy that is not provably this state's
 * is left, with a warning (they cost nothing without the MIG). A policy
 * without a lineage (made before policies carried one) goes when this
 * state's MIG, read in the same call, referred to it. guard NULL: no
 * reads (tests).
 */
int tpf_compute_delete_slice(struct tpf_compute_client *cc, const char *zone, const char *name,
			     unsigned which, const struct tpf_delete_guard *guard,
			     struct tpf_diags *d);
/*
 * Slice node from its MIG and its members (sorted here by name: the
 * workers' order, worker i = the i-th member by name, docs/compute-engine.md
 * "Worker order"): labels and topology from the description; machine type,
 * scheduling and node fields from the first member; state DELETING when
 * the MIG's currentActions.deleting covers its targetSize (the MIG's
 * delete runs: it deletes every member, then itself), READY when the
 * MIG is stable, every member READY and the applied topology ACTIVE;
 * when a member is dead: PREEMPTED if that member is (its preemption
 * operation, tpf_compute_mark_preempted), else TERMINATED; when one is
 * missing once the MIG is stable: TERMINATED (the caller makes it
 * PREEMPTED with tpf_compute_member_preempted); else CREATING; a
 * flex-start slice still CREATING whose members all wait is capacity_wait. 0, or -1 when mig is not tpuform's.
 */
int tpf_compute_slice_parse(json_t *mig, const char *zone, struct tpf_live_node *members,
			    size_t nmembers, struct tpf_live_node *out);

/*
 * Every field of an InstanceGroupManager tpuform reads (a partial
 * response's, as TPF_COMPUTE_INSTANCE_FIELDS): tpf_compute_slice_parse and
 * the slice's state (status whole: its bulkInstanceOperation and
 * appliedAcceleratorTopologies), the fleet test of the aggregated list
 * (description), compute_multislice.c (description), the delete guard (id,
 * resourcePolicies). Checked by tests/unit/test_gcp_fields.c.
 */
#define TPF_COMPUTE_MIG_FIELDS \
	"name,id,creationTimestamp,description,targetSize,status,currentActions/deleting,resourcePolicies"

/* Tell the client's node observer (gcp_access.h) that node `name` of
 * `zone` (its id: the MIG's, may be NULL) is a slice (struct
 * tpf_gcp_seen, shape SLICE), with members: the names of members[0..n)
 * that have an address, in that order (sorted by tpf_compute_slice_parse: the workers'
 * order), whose guest attributes hold the workers' host keys. */
void tpf_compute_seen_slice(struct tpf_compute_client *cc, const char *zone, const char *name,
			    const char *id, const struct tpf_live_node *members, size_t n);

/*
 * The fleet's MIGs (description's tpuform-fleet == fleet) of every zone, in
 * one aggregatedList walk (returnPartialSuccess=true; an unreachable scope
 * is an error): *out a new object zone -> [MIG]. 0 or an error.
 */
int tpf_compute_list_migs(struct tpf_compute_client *cc, const char *fleet, json_t **out,
			  struct tpf_diags *d);

/* ---- multislice: one MIG per slice (providers/gcp/compute_multislice.c) ---- */

/* "<node>-<k>": slice k's MIG (caller frees); its template, policy and
 * members are named after it (tpf_compute_slice_part, "-###"). */
char *tpf_compute_unit_slice(const char *node, int k);
/* 1 when MIG mig is slice *index of *nslices (> 1) of multislice node
 * *unit (new string), from its description; else 0. */
int tpf_compute_mig_unit(json_t *mig, char **unit, int *index, int *nslices);

/*
 * A MIG's description (the JSON object tpuform writes there, see
 * TPF_COMPUTE_MIG_FIELDS), parsed: a new reference the caller decrefs, NULL
 * when it is not JSON. The aggregated list (tpf_compute_list_migs) parses
 * each of the fleet's MIGs' once and keeps it in the MIG's object under
 * TPF_COMPUTE_DESC_KEY, a key no API answer has (Compute's field names have
 * no ':'), so that the refresh does not parse it twice more per MIG.
 */
#define TPF_COMPUTE_DESC_KEY "tpuform:description"
json_t *tpf_compute_mig_desc(json_t *mig);
/*
 * Multislice node `unit` from its n slices sl[0..n) (slice nodes as
 * tpf_compute_slice_parse made them; a name NULL: that slice is gone):
 * id and recipe from the first slice that exists, slices n, workers every
 * slice's, endpoints slice by slice (the workers' order; while a slice is
 * lost, exactly each slice's workers' places, a lost one's without an
 * address, so that worker w is endpoint w); state READY when
 * every slice is; when some are lost (dead or gone), PREEMPTED if one of
 * them is, else TERMINATED, with lost_slices naming them; else CREATING.
 * 0, or -1 when no slice exists.
 */
int tpf_compute_unit_merge(const char *unit, struct tpf_live_node *sl, int n,
			   struct tpf_live_node *out);
/*
 * Create multislice node `name` (r->slices slices of r's topology, in
 * r->zone), or complete it: each slice NODE-k that runs or is on its way is
 * kept; one that is lost (dead, or a member gone) is deleted and made
 * again; one that does not exist is made (tpf_compute_create_slice). Then
 * every slice is waited for (tpf_compute_wait_slice) and *out is the
 * merged node. On failure the slices this call made are deleted again;
 * those that ran before stay. Errors as tpf_compute_create_slice's.
 */
int tpf_compute_create_unit(struct tpf_compute_client *cc, const char *name,
			    const struct tpf_recipe *r, json_t *md, struct tpf_live_node *out,
			    struct tpf_diags *d);
/* Delete slices NODE-0 .. NODE-(nslices-1) (tpf_compute_delete_slice
 * each, every part, under guard); gone already is 0. The guard's id is the
 * node's (its first slice's MIG id): the other slices prove ownership by
 * their lineage alone. */
int tpf_compute_delete_unit(struct tpf_compute_client *cc, const char *zone, const char *name,
			    int nslices, const struct tpf_delete_guard *guard,
			    struct tpf_diags *d);

#endif
