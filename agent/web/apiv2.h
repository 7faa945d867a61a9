/*
 * apiv2: Prometheus Alertmanager's HTTP API v2 (its api/v2/openapi.yaml,
 * version 0.25) over corrald's alert store and silences, so that amtool,
 * Prometheus and Grafana talk to corrald as to an Alertmanager.  The
 * handlers below are routes of http.c's table; writes reach them only with
 * the API token (http.c checks it before any route).
 *
 *   GET  /api/v2/alerts          gettableAlerts (not the resolved ones)
 *   POST /api/v2/alerts          postableAlerts: each one becomes a
 *                                generated alert (server_inject_alert)
 *   GET  /api/v2/alerts/groups   one group per receiver (executor)
 *   GET  /api/v2/silences, POST /api/v2/silences,
 *   GET  /api/v2/silence/ID, DELETE /api/v2/silence/ID
 *   GET  /api/v2/status, GET /api/v2/receivers
 *   GET  /-/healthy, /-/ready    200 "OK"
 *
 * Label names: corrald's values become Prometheus label names.  A name
 * that is one already stays; corral.event is alertname, corral.severity
 * severity, .classifier.rule_id (class, context_id) rule_id (class,
 * context_id); in any other name each character outside [A-Za-z0-9_]
 * becomes '_' (lc.dev: lc_dev).  A name the alert has itself wins over a
 * mapped one.  MESSAGE and corral.summary are the annotations description
 * and summary; ISODATE, FACILITY, PRIORITY, TAGS, LEGACY_MSGHDR,
 * corral.since and corral.resolve_after are left out.  A silence's
 * matchers and the filter of GET /api/v2/silences name alertname and
 * severity as corral.event and corral.severity, and corral_NAME as
 * corral.NAME; other names as they are.
 *
 * Fingerprints are Alertmanager's: FNV-1a 64 in 16 hex digits, of an
 * alert's label set for posted alerts (whose alert id is am/FINGERPRINT),
 * of the alert id for corrald's own.
 */
#ifndef CORRAL_APIV2_H
#define CORRAL_APIV2_H

#include "agent/web/http.h"

http_handler_fn apiv2_get_alerts;
http_handler_fn apiv2_post_alerts;
http_handler_fn apiv2_get_groups;
http_handler_fn apiv2_get_silences;
http_handler_fn apiv2_post_silences;
/* req->rest: the silence id */
http_handler_fn apiv2_get_silence;
http_handler_fn apiv2_delete_silence;
http_handler_fn apiv2_get_status;
http_handler_fn apiv2_get_receivers;
/* /-/healthy and /-/ready: corrald answers, so it is both */
http_handler_fn apiv2_healthy;

/*
 * postableAlerts (a JSON array), all checked first, then each routed as a
 * rule's alert (server_inject_alert); POST /api/v2/alerts and the control
 * socket's alert-add.  0, or -1 with the reason in err and none routed.
 */
int apiv2_receive_alerts(struct server *srv, const json_t *alerts, struct buf *err);

/* The API's counters in Prometheus text format (server_metrics). */
void apiv2_metrics(struct buf *out);

#endif
