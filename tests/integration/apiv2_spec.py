#!/usr/bin/env python3
# apiv2_spec.py: checks a JSON answer of corrald's /api/v2 against
# Alertmanager's OpenAPI definitions (the reference: what amtool,
# Prometheus and Grafana expect).
#
#   apiv2_spec.py SCHEMA FILE    exit 0, or 1 with the path of each fault
#
# SCHEMA: a definition name (gettableAlerts, alertGroups, ...), or one of
# the answers the paths declare without a definition: receivers,
# postSilencesOK, BadRequest.  Types, required members, enums, minItems,
# labelSet's string values and date-time formats (RFC 3339) are checked.
#
# The definitions below are copied from Alertmanager 0.25.0's
# api/v2/openapi.yaml (https://github.com/prometheus/alertmanager), as far
# as corrald's answers need them, turned into Python:
#
#   Copyright Prometheus Team
#   Licensed under the Apache License, Version 2.0 (the "License"); you may
#   not use this file except in compliance with the License.  You may obtain
#   a copy of the License at http://www.apache.org/licenses/LICENSE-2.0
#   Unless required by applicable law or agreed to in writing, software
#   distributed under the License is distributed on an "AS IS" BASIS,
#   WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
#   See the License for the specific language governing permissions and
#   limitations under the License.
import datetime
import json
import re
import sys


def ref(name):
    return {"$ref": "#/definitions/" + name}


DT = {"type": "string", "format": "date-time"}
STR = {"type": "string"}

DEFINITIONS = {
    "alertmanagerStatus": {
        "type": "object",
        "properties": {"cluster": ref("clusterStatus"), "versionInfo": ref("versionInfo"),
                       "config": ref("alertmanagerConfig"), "uptime": DT},
        "required": ["cluster", "versionInfo", "config", "uptime"]},
    "clusterStatus": {
        "type": "object",
        "properties": {"name": STR,
                       "status": {"type": "string", "enum": ["ready", "settling", "disabled"]},
                       "peers": {"type": "array", "items": ref("peerStatus")}},
        "required": ["status"]},
    "alertmanagerConfig": {
        "type": "object", "properties": {"original": STR}, "required": ["original"]},
    "versionInfo": {
        "type": "object",
        "properties": {k: STR for k in ("version", "revision", "branch", "buildUser",
                                        "buildDate", "goVersion")},
        "required": ["version", "revision", "branch", "buildUser", "buildDate", "goVersion"]},
    "peerStatus": {
        "type": "object", "properties": {"name": STR, "address": STR},
        "required": ["name", "address"]},
    "silence": {
        "type": "object",
        "properties": {"matchers": ref("matchers"), "startsAt": DT, "endsAt": DT,
                       "createdBy": STR, "comment": STR},
        "required": ["matchers", "startsAt", "endsAt", "createdBy", "comment"]},
    "gettableSilence": {
        "allOf": [{"type": "object",
                   "properties": {"id": STR, "status": ref("silenceStatus"), "updatedAt": DT},
                   "required": ["id", "status", "updatedAt"]},
                  ref("silence")]},
    "silenceStatus": {
        "type": "object",
        "properties": {"state": {"type": "string", "enum": ["expired", "active", "pending"]}},
        "required": ["state"]},
    "gettableSilences": {"type": "array", "items": ref("gettableSilence")},
    "matchers": {"type": "array", "items": ref("matcher"), "minItems": 1},
    "matcher": {
        "type": "object",
        "properties": {"name": STR, "value": STR, "isRegex": {"type": "boolean"},
                       "isEqual": {"type": "boolean"}},
        "required": ["name", "value", "isRegex"]},
    "alert": {
        "type": "object",
        "properties": {"labels": ref("labelSet"),
                       "generatorURL": {"type": "string", "format": "uri"}},
        "required": ["labels"]},
    "gettableAlerts": {"type": "array", "items": ref("gettableAlert")},
    "gettableAlert": {
        "allOf": [{"type": "object",
                   "properties": {"annotations": ref("labelSet"),
                                  "receivers": {"type": "array", "items": ref("receiver")},
                                  "fingerprint": STR, "startsAt": DT, "updatedAt": DT,
                                  "endsAt": DT, "status": ref("alertStatus")},
                   "required": ["receivers", "fingerprint", "startsAt", "updatedAt", "endsAt",
                                "annotations", "status"]},
                  ref("alert")]},
    "alertGroups": {"type": "array", "items": ref("alertGroup")},
    "alertGroup": {
        "type": "object",
        "properties": {"labels": ref("labelSet"), "receiver": ref("receiver"),
                       "alerts": {"type": "array", "items": ref("gettableAlert")}},
        "required": ["labels", "receiver", "alerts"]},
    "alertStatus": {
        "type": "object",
        "properties": {"state": {"type": "string",
                                 "enum": ["unprocessed", "active", "suppressed"]},
                       "silencedBy": {"type": "array", "items": STR},
                       "inhibitedBy": {"type": "array", "items": STR}},
        "required": ["state", "silencedBy", "inhibitedBy"]},
    "receiver": {"type": "object", "properties": {"name": STR}, "required": ["name"]},
    "labelSet": {"type": "object", "additionalProperties": STR},
    # the answers of paths that declare their schema inline
    "receivers": {"type": "array", "items": ref("receiver")},
    "postSilencesOK": {"type": "object", "properties": {"silenceID": STR}},
    "BadRequest": STR,
}

# RFC 3339, as Go's strfmt.DateTime reads it
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}


def check(v, schema, path, faults):
    if "$ref" in schema:
        return check(v, DEFINITIONS[schema["$ref"].split("/")[-1]], path, faults)
    for part in schema.get("allOf", []):
        check(v, part, path, faults)
    t = schema.get("type")
    if t and not isinstance(v, TYPES[t]):
        faults.append("%s: %s expected, got %r" % (path, t, v))
        return
    if "enum" in schema and v not in schema["enum"]:
        faults.append("%s: one of %s expected, got %r" % (path, schema["enum"], v))
    if schema.get("format") == "date-time":
        if not RFC3339.match(v):
            faults.append("%s: an RFC 3339 date-time expected, got %r" % (path, v))
        else:
            datetime.datetime.fromisoformat(re.sub(r"\.\d+", "", v).replace("Z", "+00:00"))
    if t == "object":
        for k in schema.get("required", []):
            if k not in v:
                faults.append("%s: required member %s missing" % (path, k))
        props = schema.get("properties", {})
        for k, sub in v.items():
            if k in props:
                check(sub, props[k], "%s.%s" % (path, k), faults)
            elif "additionalProperties" in schema:
                check(sub, schema["additionalProperties"], "%s.%s" % (path, k), faults)
    if t == "array":
        if len(v) < schema.get("minItems", 0):
            faults.append("%s: at least %d items expected" % (path, schema["minItems"]))
        for i, item in enumerate(v):
            check(item, schema.get("items", {}), "%s[%d]" % (path, i), faults)


def main():
    name, path = sys.argv[1:3]
    with open(path) as f:
        v = json.load(f)
    faults = []
    check(v, DEFINITIONS[name], name, faults)
    for f in faults:
        print(f)
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
