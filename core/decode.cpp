// DaemonSet, Node, metadata, selectors, affinity and tolerations. The pod
// template's spec is in decode_pod.cpp.
#include "core/decode.h"

#include "core/decode_internal.h"

namespace daemonlet {
namespace detail {

void decode_meta(Reader& r, const Json& v, const FieldPath& p, ObjectMeta& m) {
    if (!r.object(v, p)) return;
    r.str(v, p, "name", m.name);
    r.str(v, p, "generateName", m.generate_name);
    r.str(v, p, "namespace", m.namespace_);
    r.string_map(v, p, "labels", m.labels);
    r.string_map(v, p, "annotations", m.annotations);
    r.str(v, p, "uid", m.uid);
    r.i64(v, p, "generation", m.generation);
    r.str(v, p, "resourceVersion", m.resource_version);
    r.str(v, p, "creationTimestamp", m.creation_timestamp);
}

bool decode_root(Reader& r, const Json& obj, ObjectMeta& m) {
    if (!r.object(obj, FieldPath("<root>"))) return false;
    if (const Json* meta = Reader::member(obj, "metadata")) decode_meta(r, *meta, FieldPath("metadata"), m);
    return true;
}

namespace {

void decode_requirement(Reader& r, const Json& v, const FieldPath& p, NodeSelectorRequirement& q) {
    if (!r.object(v, p)) return;
    r.str(v, p, "key", q.key);
    r.str(v, p, "operator", q.op);
    r.strings(v, p, "values", q.values);
}

void decode_label_requirement(Reader& r, const Json& v, const FieldPath& p, LabelSelectorRequirement& q) {
    if (!r.object(v, p)) return;
    r.str(v, p, "key", q.key);
    r.str(v, p, "operator", q.op);
    r.strings(v, p, "values", q.values);
}

void decode_label_selector(Reader& r, const Json& v, const FieldPath& p, LabelSelector& s) {
    r.string_map(v, p, "matchLabels", s.match_labels);
    r.list(v, p, "matchExpressions", s.match_expressions,
           [&](const Json& e, const FieldPath& ep, auto& q) { decode_label_requirement(r, e, ep, q); });
}

void decode_node_selector(Reader& r, const Json& v, const FieldPath& p, NodeSelector& s) {
    r.list(v, p, "nodeSelectorTerms", s.node_selector_terms,
           [&](const Json& e, const FieldPath& ep, auto& t) { decode_node_selector_term(r, e, ep, t); });
}

void decode_node_affinity(Reader& r, const Json& v, const FieldPath& p, NodeAffinity& a) {
    r.nested(v, p, "requiredDuringSchedulingIgnoredDuringExecution", a.required,
             [&](const Json& e, const FieldPath& ep, NodeSelector& s) { decode_node_selector(r, e, ep, s); });
    r.list(v, p, "preferredDuringSchedulingIgnoredDuringExecution", a.preferred,
           [&](const Json& e, const FieldPath& ep, PreferredSchedulingTerm& t) {
               if (!r.object(e, ep)) return;
               r.i32(e, ep, "weight", t.weight);
               const Json* pref = Reader::member(e, "preference");
               if (pref) decode_node_selector_term(r, *pref, ep.child("preference"), t.preference);
           });
}

void decode_taint(Reader& r, const Json& v, const FieldPath& p, Taint& t) {
    if (!r.object(v, p)) return;
    r.str(v, p, "key", t.key);
    r.str(v, p, "value", t.value);
    r.str(v, p, "effect", t.effect);
    r.str(v, p, "timeAdded", t.time_added);
}

void decode_update_strategy(Reader& r, const Json& v, const FieldPath& p, DaemonSetUpdateStrategy& s) {
    if (!r.object(v, p)) return;
    r.str(v, p, "type", s.type);
    r.nested(v, p, "rollingUpdate", s.rolling_update,
             [&](const Json& e, const FieldPath& ep, RollingUpdateDaemonSet& ru) {
                 r.int_or_string(e, ep, "maxUnavailable", ru.max_unavailable);
                 r.int_or_string(e, ep, "maxSurge", ru.max_surge);
             });
}

void decode_status(Reader& r, const Json& v, const FieldPath& p, DaemonSetStatus& s) {
    if (!r.object(v, p)) return;
    r.i32(v, p, "currentNumberScheduled", s.current_number_scheduled);
    r.i32(v, p, "numberMisscheduled", s.number_misscheduled);
    r.i32(v, p, "desiredNumberScheduled", s.desired_number_scheduled);
    r.i32(v, p, "numberReady", s.number_ready);
    r.i64(v, p, "observedGeneration", s.observed_generation);
    r.i32(v, p, "updatedNumberScheduled", s.updated_number_scheduled);
    r.i32(v, p, "numberAvailable", s.number_available);
    r.i32(v, p, "numberUnavailable", s.number_unavailable);
    r.i32(v, p, "collisionCount", s.collision_count);
}

}  // namespace

void decode_node_selector_term(Reader& r, const Json& v, const FieldPath& p, NodeSelectorTerm& t) {
    if (!r.object(v, p)) return;
    auto req = [&](const Json& e, const FieldPath& ep, NodeSelectorRequirement& q) {
        decode_requirement(r, e, ep, q);
    };
    r.list(v, p, "matchExpressions", t.match_expressions, req);
    r.list(v, p, "matchFields", t.match_fields, req);
}

void decode_affinity(Reader& r, const Json& v, const FieldPath& p, Affinity& a) {
    if (!r.object(v, p)) return;
    r.nested(
        v, p, "nodeAffinity", a.node_affinity,
        [&](const Json& e, const FieldPath& ep, NodeAffinity& na) { decode_node_affinity(r, e, ep, na); });
    if (const Json* pa = Reader::member(v, "podAffinity")) a.pod_affinity = *pa;
    if (const Json* paa = Reader::member(v, "podAntiAffinity")) a.pod_anti_affinity = *paa;
}

void decode_toleration(Reader& r, const Json& v, const FieldPath& p, Toleration& t) {
    if (!r.object(v, p)) return;
    r.str(v, p, "key", t.key);
    r.str(v, p, "operator", t.op);
    r.str(v, p, "value", t.value);
    r.str(v, p, "effect", t.effect);
    r.i64(v, p, "tolerationSeconds", t.toleration_seconds);
}

}  // namespace detail

using detail::Reader;

namespace {
FieldErrors daemonset_fields(const Json& obj, DaemonSet& out) {
    FieldErrors errs;
    Reader r(errs);
    FieldPath root;
    if (!detail::decode_root(r, obj, out.metadata)) return errs;
    if (const Json* spec = Reader::member(obj, "spec")) {
        FieldPath sp = root.child("spec");
        if (r.object(*spec, sp)) {
            r.nested(*spec, sp, "selector", out.spec.selector,
                     [&](const Json& e, const FieldPath& ep, LabelSelector& s) {
                         detail::decode_label_selector(r, e, ep, s);
                     });
            if (const Json* t = Reader::member(*spec, "template"))
                detail::decode_pod_template(r, *t, sp.child("template"), out.spec.template_);
            if (const Json* u = Reader::member(*spec, "updateStrategy"))
                detail::decode_update_strategy(r, *u, sp.child("updateStrategy"), out.spec.update_strategy);
            r.i32(*spec, sp, "minReadySeconds", out.spec.min_ready_seconds);
            r.i32(*spec, sp, "revisionHistoryLimit", out.spec.revision_history_limit);
            r.i64(*spec, sp, "templateGeneration", out.spec.template_generation);
        }
    }
    if (const Json* st = Reader::member(obj, "status"))
        detail::decode_status(r, *st, root.child("status"), out.status);
    return errs;
}
}  // namespace

FieldErrors decode_daemonset(const Json& obj, DaemonSet& out) {
    FieldErrors errs = daemonset_fields(obj, out);
    out.object = obj;
    return errs;
}

FieldErrors decode_daemonset(Json&& obj, DaemonSet& out) {
    FieldErrors errs = daemonset_fields(obj, out);
    out.object = std::move(obj);
    return errs;
}

FieldErrors decode_node(const Json& obj, Node& out) {
    FieldErrors errs;
    Reader r(errs);
    FieldPath root;
    if (!detail::decode_root(r, obj, out.metadata)) return errs;
    if (const Json* spec = Reader::member(obj, "spec")) {
        FieldPath sp = root.child("spec");
        if (r.object(*spec, sp)) {
            r.boolean(*spec, sp, "unschedulable", out.unschedulable);
            r.list(*spec, sp, "taints", out.taints,
                   [&](const Json& e, const FieldPath& ep, Taint& t) { detail::decode_taint(r, e, ep, t); });
        }
    }
    out.object = obj;
    return errs;
}

}  // namespace daemonlet
