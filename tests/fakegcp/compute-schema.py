#!/usr/bin/env python3
"""Regenerate tests/fakegcp/compute.v1.schema.json, the trimmed Compute
Engine v1 schema that fakegcp validates request bodies against
(fg_compute_schema.c). Not part of the build: the JSON file is committed.

Source: gcloud 528's generated messages,
  <sdk root>/lib/googlecloudsdk/generated_clients/apis/compute/v1/compute_v1_messages.py
(find the root with `gcloud info --format='value(installation.sdk_root)'`),
plus the fields and enum values the current v1 API has and gcloud 528's v1
schema lacks (ADDITIONS below), each from googleapis/googleapis
google/cloud/compute/v1/compute.proto (revision 20260722) as quoted in the
project's Compute Engine reference (docs/compute-engine.md, "Sources").

    python3 tests/fakegcp/compute-schema.py [SDK_ROOT] > tests/fakegcp/compute.v1.schema.json

Output: {"source": ..., "messages": {NAME: {FIELD: SPEC}}} where SPEC is
{"t": string|int32|int64|uint32|uint64|bool|double|bytes|enum|message|map,
 "r": true when repeated, "e": [enum values], "m": message name,
 "v": SPEC of a map's values}.
"""
import json
import subprocess
import sys

ROOTS = ["Instance", "InstanceTemplate", "ResourcePolicy", "InstanceGroupManager",
         "Metadata", "InstancesSetLabelsRequest"]

# The current v1 API, beyond gcloud 528's v1 messages (compute.proto).
ADDITIONS = {
    # Scheduling.ProvisioningModel: FLEX_START (compute.proto l.69928 ff.)
    ("Scheduling", "provisioningModel"): {"enum+": ["FLEX_START"]},
    # Instance.Status: PENDING, PENDING_STOP
    ("Instance", "status"): {"enum+": ["PENDING", "PENDING_STOP"]},
    # InstanceParams.request_valid_for_duration
    ("InstanceParams", "requestValidForDuration"): {"t": "message", "m": "Duration"},
    # InstanceGroupManager.target_size_policy {mode: BULK | INDIVIDUAL}
    ("InstanceGroupManager", "targetSizePolicy"):
        {"t": "message", "m": "InstanceGroupManagerTargetSizePolicy"},
    ("InstanceGroupManagerTargetSizePolicy", "mode"):
        {"t": "enum", "e": ["BULK", "INDIVIDUAL", "UNSPECIFIED_MODE"]},
    # ResourcePolicyWorkloadPolicy.accelerator_topology_mode
    ("ResourcePolicyWorkloadPolicy", "acceleratorTopologyMode"):
        {"t": "enum", "e": ["AUTO_CONNECT", "PROVISION_ONLY"]},
    # InstanceGroupManagerInstanceLifecyclePolicy.on_failed_health_check
    ("InstanceGroupManagerInstanceLifecyclePolicy", "onFailedHealthCheck"):
        {"t": "enum", "e": ["DEFAULT_ACTION", "DO_NOTHING", "REPAIR"]},
}


def load(sdk):
    sys.path[:0] = [sdk + "/lib", sdk + "/lib/third_party"]
    from googlecloudsdk.generated_clients.apis.compute.v1 import compute_v1_messages
    return compute_v1_messages


def map_value(cls):
    """The value field of an apitools map message (additionalProperties), or None."""
    fields = list(cls.all_fields())
    if len(fields) != 1 or fields[0].name != "additionalProperties" or not fields[0].repeated:
        return None
    entry = fields[0].type
    names = {f.name: f for f in entry.all_fields()}
    return names.get("value") if set(names) == {"key", "value"} else None


def spec(f, todo):
    kind = type(f).__name__
    if kind == "EnumField":
        s = {"t": "enum", "e": sorted(e.name for e in f.type)}
    elif kind == "MessageField":
        v = map_value(f.type)
        if v is not None:
            s = {"t": "map", "v": spec(v, todo)}
        else:
            s = {"t": "message", "m": f.type.__name__}
            todo.append(f.type)
    elif kind == "IntegerField":
        s = {"t": str(f.variant).lower()}
    elif kind == "BooleanField":
        s = {"t": "bool"}
    elif kind == "FloatField":
        s = {"t": "double"}
    elif kind == "BytesField":
        s = {"t": "bytes"}
    else:
        s = {"t": "string"}
    if f.repeated:
        s["r"] = True
    return s


def main():
    sdk = sys.argv[1] if len(sys.argv) > 1 else subprocess.check_output(
        ["gcloud", "info", "--format=value(installation.sdk_root)"], text=True).strip()
    m = load(sdk)
    todo = [getattr(m, n) for n in ROOTS]
    out = {}
    while todo:
        cls = todo.pop()
        if cls.__name__ in out:
            continue
        out[cls.__name__] = {f.name: spec(f, todo) for f in cls.all_fields()}
    for (msg, field), add in ADDITIONS.items():
        fields = out.setdefault(msg, {})
        if "enum+" in add:
            fields[field]["e"] = sorted(set(fields[field]["e"]) | set(add["enum+"]))
        else:
            fields[field] = add
            cls = getattr(m, add.get("m", ""), None)
            if cls is not None and add["m"] not in out:
                out[add["m"]] = {f.name: spec(f, todo) for f in cls.all_fields()}
    doc = {
        "source": "gcloud 528 compute_v1_messages.py (" + sdk + "), plus the current v1 "
                  "fields listed in tests/fakegcp/compute-schema.py (compute.proto rev. 20260722)",
        "messages": {k: out[k] for k in sorted(out)},
    }
    json.dump(doc, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


main()
