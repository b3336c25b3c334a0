// The pod template: spec, containers, probes, volumes.
#include "core/decode_internal.h"

namespace daemonlet::detail {
namespace {

void decode_handler(Reader& r, const Json& v, const FieldPath& p, Handler& h) {
    r.nested(v, p, "exec", h.exec, [&](const Json& e, const FieldPath& ep, ExecAction& x) {
        r.strings(e, ep, "command", x.command);
    });
    r.nested(v, p, "httpGet", h.http_get, [&](const Json& e, const FieldPath& ep, HTTPGetAction& x) {
        r.str(e, ep, "path", x.path);
        r.int_or_string(e, ep, "port", x.port);
        r.str(e, ep, "host", x.host);
        r.str(e, ep, "scheme", x.scheme);
        r.list(e, ep, "httpHeaders", x.http_headers,
               [&](const Json& hv, const FieldPath& hp, HTTPHeader& hh) {
                   if (!r.object(hv, hp)) return;
                   r.str(hv, hp, "name", hh.name);
                   r.str(hv, hp, "value", hh.value);
               });
    });
    r.nested(v, p, "tcpSocket", h.tcp_socket, [&](const Json& e, const FieldPath& ep, TCPSocketAction& x) {
        r.int_or_string(e, ep, "port", x.port);
        r.str(e, ep, "host", x.host);
    });
    if (const Json* s = Reader::member(v, "sleep")) {
        FieldPath sp = p.child("sleep");
        if (r.object(*s, sp)) {
            std::int64_t secs = 0;
            r.i64(*s, sp, "seconds", secs);
            h.sleep_seconds = secs;
        }
    }
    r.nested(v, p, "grpc", h.grpc, [&](const Json& e, const FieldPath& ep, GRPCAction& x) {
        r.i32(e, ep, "port", x.port);
        r.str(e, ep, "service", x.service);
    });
}

void decode_probe(Reader& r, const Json& v, const FieldPath& p, Probe& pr) {
    decode_handler(r, v, p, pr.handler);
    r.i32(v, p, "initialDelaySeconds", pr.initial_delay_seconds);
    r.i32(v, p, "timeoutSeconds", pr.timeout_seconds);
    r.i32(v, p, "periodSeconds", pr.period_seconds);
    r.i32(v, p, "successThreshold", pr.success_threshold);
    r.i32(v, p, "failureThreshold", pr.failure_threshold);
    r.i64(v, p, "terminationGracePeriodSeconds", pr.termination_grace_period_seconds);
}

void decode_object_field(Reader& r, const Json& f, const FieldPath& fp, ObjectFieldSelector& o) {
    r.str(f, fp, "apiVersion", o.api_version);
    r.str(f, fp, "fieldPath", o.field_path);
}

void decode_resource_field(Reader& r, const Json& f, const FieldPath& fp, ResourceFieldSelector& o) {
    r.str(f, fp, "containerName", o.container_name);
    r.str(f, fp, "resource", o.resource);
    r.quantity(f, fp, "divisor", o.divisor);
}

void decode_key_selector(Reader& r, const Json& v, const FieldPath& p, KeySelector& k) {
    r.str(v, p, "name", k.name);
    r.str(v, p, "key", k.key);
    r.boolean(v, p, "optional", k.optional);
}

void decode_env_from(Reader& r, const Json& v, const FieldPath& p, EnvFromSource& e) {
    if (!r.object(v, p)) return;
    r.str(v, p, "prefix", e.prefix);
    auto ref = [&](const Json& s, const FieldPath& sp, EnvFromRef& out) {
        r.str(s, sp, "name", out.name);
        r.boolean(s, sp, "optional", out.optional);
    };
    r.nested(v, p, "configMapRef", e.config_map_ref, ref);
    r.nested(v, p, "secretRef", e.secret_ref, ref);
}

void decode_env(Reader& r, const Json& v, const FieldPath& p, EnvVar& e) {
    if (!r.object(v, p)) return;
    r.str(v, p, "name", e.name);
    r.str(v, p, "value", e.value);
    r.nested(v, p, "valueFrom", e.value_from, [&](const Json& s, const FieldPath& sp, EnvVarSource& src) {
        r.nested(s, sp, "fieldRef", src.field_ref,
                 [&](const Json& f, const FieldPath& fp, ObjectFieldSelector& o) {
                     decode_object_field(r, f, fp, o);
                 });
        r.nested(s, sp, "resourceFieldRef", src.resource_field_ref,
                 [&](const Json& f, const FieldPath& fp, ResourceFieldSelector& o) {
                     decode_resource_field(r, f, fp, o);
                 });
        auto key = [&](const Json& f, const FieldPath& fp, KeySelector& k) {
            decode_key_selector(r, f, fp, k);
        };
        r.nested(s, sp, "configMapKeyRef", src.config_map_key, key);
        r.nested(s, sp, "secretKeyRef", src.secret_key, key);
        if (const Json* c = Reader::member(s, "configMapKeyRef")) src.config_map_key_ref = *c;
        if (const Json* c = Reader::member(s, "secretKeyRef")) src.secret_key_ref = *c;
    });
}

void decode_seccomp_profile(Reader& r, const Json& v, const FieldPath& p, std::optional<SeccompProfile>& s) {
    r.nested(v, p, "seccompProfile", s, [&](const Json& e, const FieldPath& ep, SeccompProfile& sp) {
        r.str(e, ep, "type", sp.type);
        r.str(e, ep, "localhostProfile", sp.localhost_profile);
    });
}

void decode_pod_security_context(Reader& r, const Json& v, const FieldPath& p, PodSecurityContext& s) {
    r.i64(v, p, "runAsUser", s.run_as_user);
    r.i64(v, p, "runAsGroup", s.run_as_group);
    r.boolean(v, p, "runAsNonRoot", s.run_as_non_root);
    r.list(v, p, "supplementalGroups", s.supplemental_groups,
           [&](const Json& e, const FieldPath& ep, std::int64_t& g) {
               if (e.is_number_integer())
                   g = e.get<std::int64_t>();
               else
                   r.type_error(ep, e, "an integer (int64)");
           });
    r.i64(v, p, "fsGroup", s.fs_group);
    decode_seccomp_profile(r, v, p, s.seccomp_profile);
    r.list(v, p, "sysctls", s.sysctls, [&](const Json& e, const FieldPath& ep, Sysctl& sc) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "name", sc.name);
        r.str(e, ep, "value", sc.value);
    });
}

void decode_security_context(Reader& r, const Json& v, const FieldPath& p, SecurityContext& s) {
    r.boolean(v, p, "privileged", s.privileged);
    r.i64(v, p, "runAsUser", s.run_as_user);
    r.i64(v, p, "runAsGroup", s.run_as_group);
    r.boolean(v, p, "runAsNonRoot", s.run_as_non_root);
    r.boolean(v, p, "readOnlyRootFilesystem", s.read_only_root_filesystem);
    r.boolean(v, p, "allowPrivilegeEscalation", s.allow_privilege_escalation);
    if (const Json* c = Reader::member(v, "capabilities")) {
        FieldPath cp = p.child("capabilities");
        if (r.object(*c, cp)) {
            r.strings(*c, cp, "add", s.capabilities_add);
            r.strings(*c, cp, "drop", s.capabilities_drop);
        }
    }
    decode_seccomp_profile(r, v, p, s.seccomp_profile);
    r.str(v, p, "procMount", s.proc_mount);
}

void decode_container(Reader& r, const Json& v, const FieldPath& p, Container& c) {
    if (!r.object(v, p)) return;
    r.str(v, p, "name", c.name);
    r.str(v, p, "image", c.image);
    r.str(v, p, "imagePullPolicy", c.image_pull_policy);
    r.strings(v, p, "command", c.command);
    r.strings(v, p, "args", c.args);
    r.str(v, p, "workingDir", c.working_dir);
    r.list(v, p, "env", c.env,
           [&](const Json& e, const FieldPath& ep, EnvVar& ev) { decode_env(r, e, ep, ev); });
    r.list(v, p, "envFrom", c.env_from,
           [&](const Json& e, const FieldPath& ep, EnvFromSource& ef) { decode_env_from(r, e, ep, ef); });
    r.list(v, p, "ports", c.ports, [&](const Json& e, const FieldPath& ep, ContainerPort& port) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "name", port.name);
        r.i32(e, ep, "containerPort", port.container_port);
        r.i32(e, ep, "hostPort", port.host_port);
        r.str(e, ep, "protocol", port.protocol);
        r.str(e, ep, "hostIP", port.host_ip);
    });
    if (const Json* res = Reader::member(v, "resources")) {
        FieldPath rp = p.child("resources");
        if (r.object(*res, rp)) {
            r.quantity_map(*res, rp, "limits", c.resources.limits);
            r.quantity_map(*res, rp, "requests", c.resources.requests);
        }
    }
    r.list(v, p, "volumeMounts", c.volume_mounts, [&](const Json& e, const FieldPath& ep, VolumeMount& m) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "name", m.name);
        r.str(e, ep, "mountPath", m.mount_path);
        r.str(e, ep, "subPath", m.sub_path);
        r.boolean(e, ep, "readOnly", m.read_only);
        r.str(e, ep, "mountPropagation", m.mount_propagation);
    });
    auto probe = [&](const Json& e, const FieldPath& ep, Probe& pr) { decode_probe(r, e, ep, pr); };
    r.nested(v, p, "livenessProbe", c.liveness_probe, probe);
    r.nested(v, p, "readinessProbe", c.readiness_probe, probe);
    r.nested(v, p, "startupProbe", c.startup_probe, probe);
    r.str(v, p, "restartPolicy", c.restart_policy);
    r.nested(v, p, "lifecycle", c.lifecycle, [&](const Json& e, const FieldPath& ep, Lifecycle& l) {
        auto handler = [&](const Json& h, const FieldPath& hp, Handler& hh) { decode_handler(r, h, hp, hh); };
        r.nested(e, ep, "postStart", l.post_start, handler);
        r.nested(e, ep, "preStop", l.pre_stop, handler);
    });
    r.nested(v, p, "securityContext", c.security_context,
             [&](const Json& e, const FieldPath& ep, SecurityContext& s) {
                 decode_security_context(r, e, ep, s);
             });
    r.str(v, p, "terminationMessagePath", c.termination_message_path);
    r.str(v, p, "terminationMessagePolicy", c.termination_message_policy);
}

void decode_items(Reader& r, const Json& v, const FieldPath& p, std::vector<KeyToPath>& items) {
    r.list(v, p, "items", items, [&](const Json& e, const FieldPath& ep, KeyToPath& k) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "key", k.key);
        r.str(e, ep, "path", k.path);
        r.i32(e, ep, "mode", k.mode);
    });
}

void decode_downward_items(Reader& r, const Json& v, const FieldPath& p,
                           std::vector<DownwardAPIVolumeFile>& items) {
    r.list(v, p, "items", items, [&](const Json& e, const FieldPath& ep, DownwardAPIVolumeFile& f) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "path", f.path);
        r.nested(e, ep, "fieldRef", f.field_ref,
                 [&](const Json& x, const FieldPath& xp, ObjectFieldSelector& o) {
                     decode_object_field(r, x, xp, o);
                 });
        r.nested(e, ep, "resourceFieldRef", f.resource_field_ref,
                 [&](const Json& x, const FieldPath& xp, ResourceFieldSelector& o) {
                     decode_resource_field(r, x, xp, o);
                 });
        r.i32(e, ep, "mode", f.mode);
    });
}

void decode_key_projection(Reader& r, const Json& v, const FieldPath& p, const char* name_key,
                           KeyProjection& k) {
    r.str(v, p, name_key, k.name);
    decode_items(r, v, p, k.items);
    r.boolean(v, p, "optional", k.optional);
}

void decode_projection(Reader& r, const Json& v, const FieldPath& p, VolumeProjection& s) {
    if (!r.object(v, p)) return;
    r.nested(v, p, "configMap", s.config_map, [&](const Json& e, const FieldPath& ep, KeyProjection& k) {
        decode_key_projection(r, e, ep, "name", k);
    });
    r.nested(v, p, "secret", s.secret, [&](const Json& e, const FieldPath& ep, KeyProjection& k) {
        decode_key_projection(r, e, ep, "name", k);
    });
    r.nested(v, p, "downwardAPI", s.downward_api,
             [&](const Json& e, const FieldPath& ep, std::vector<DownwardAPIVolumeFile>& items) {
                 decode_downward_items(r, e, ep, items);
             });
    r.nested(v, p, "serviceAccountToken", s.service_account_token,
             [&](const Json& e, const FieldPath& ep, ServiceAccountTokenProjection& t) {
                 r.str(e, ep, "audience", t.audience);
                 r.i64(e, ep, "expirationSeconds", t.expiration_seconds);
                 r.str(e, ep, "path", t.path);
             });
}

// A configMap or secret volume source: its name (under `name_key`), items,
// optional and defaultMode.
void decode_key_volume(Reader& r, const Json& v, const FieldPath& p, const char* name_key, std::string& name,
                       Volume& vol) {
    if (!r.object(v, p)) return;
    r.str(v, p, name_key, name);
    decode_items(r, v, p, vol.items);
    r.boolean(v, p, "optional", vol.optional);
    r.i32(v, p, "defaultMode", vol.default_mode);
}

void decode_volume(Reader& r, const Json& v, const FieldPath& p, Volume& vol) {
    if (!r.object(v, p)) return;
    vol.raw = v;
    r.str(v, p, "name", vol.name);
    int sources = 0;
    for (auto it = v.begin(); it != v.end(); ++it)
        if (it.key() != "name" && !it.value().is_null()) ++sources;
    if (const Json* hp = Reader::member(v, "hostPath")) {
        FieldPath pp = p.child("hostPath");
        vol.source = Volume::Source::HostPath;
        if (r.object(*hp, pp)) {
            r.str(*hp, pp, "path", vol.host_path);
            r.str(*hp, pp, "type", vol.host_path_type);
        }
    } else if (const Json* ed = Reader::member(v, "emptyDir")) {
        FieldPath ep = p.child("emptyDir");
        vol.source = Volume::Source::EmptyDir;
        if (r.object(*ed, ep)) {
            r.str(*ed, ep, "medium", vol.empty_dir_medium);
            r.quantity(*ed, ep, "sizeLimit", vol.empty_dir_size_limit);
        }
    } else if (const Json* cm = Reader::member(v, "configMap")) {
        FieldPath cp = p.child("configMap");
        vol.source = Volume::Source::ConfigMap;
        decode_key_volume(r, *cm, cp, "name", vol.config_map_name, vol);
    } else if (const Json* sec = Reader::member(v, "secret")) {
        FieldPath sp = p.child("secret");
        vol.source = Volume::Source::Secret;
        decode_key_volume(r, *sec, sp, "secretName", vol.secret_name, vol);
    } else if (const Json* da = Reader::member(v, "downwardAPI")) {
        FieldPath dp = p.child("downwardAPI");
        vol.source = Volume::Source::DownwardAPI;
        if (r.object(*da, dp)) {
            decode_downward_items(r, *da, dp, vol.downward_api_items);
            r.i32(*da, dp, "defaultMode", vol.default_mode);
        }
    } else if (const Json* pr = Reader::member(v, "projected")) {
        FieldPath pp = p.child("projected");
        vol.source = Volume::Source::Projected;
        if (r.object(*pr, pp)) {
            r.list(*pr, pp, "sources", vol.projections,
                   [&](const Json& e, const FieldPath& ep, VolumeProjection& s) {
                       decode_projection(r, e, ep, s);
                   });
            r.i32(*pr, pp, "defaultMode", vol.default_mode);
        }
    } else if (sources > 0) {
        vol.source = Volume::Source::Other;
    }
}

void decode_pod_spec(Reader& r, const Json& v, const FieldPath& p, PodSpec& s) {
    if (!r.object(v, p)) return;
    r.str(v, p, "nodeName", s.node_name);
    r.string_map(v, p, "nodeSelector", s.node_selector);
    r.nested(v, p, "affinity", s.affinity,
             [&](const Json& e, const FieldPath& ep, Affinity& a) { decode_affinity(r, e, ep, a); });
    r.list(v, p, "tolerations", s.tolerations,
           [&](const Json& e, const FieldPath& ep, Toleration& t) { decode_toleration(r, e, ep, t); });
    auto container = [&](const Json& e, const FieldPath& ep, Container& c) { decode_container(r, e, ep, c); };
    r.list(v, p, "initContainers", s.init_containers, container);
    r.list(v, p, "containers", s.containers, container);
    r.list(v, p, "volumes", s.volumes,
           [&](const Json& e, const FieldPath& ep, Volume& vol) { decode_volume(r, e, ep, vol); });
    r.boolean(v, p, "hostNetwork", s.host_network);
    r.boolean(v, p, "hostPID", s.host_pid);
    r.boolean(v, p, "hostIPC", s.host_ipc);
    r.str(v, p, "restartPolicy", s.restart_policy);
    r.i64(v, p, "terminationGracePeriodSeconds", s.termination_grace_period_seconds);
    r.i64(v, p, "activeDeadlineSeconds", s.active_deadline_seconds);
    r.str(v, p, "dnsPolicy", s.dns_policy);
    r.str(v, p, "hostname", s.hostname);
    r.str(v, p, "subdomain", s.subdomain);
    r.nested(v, p, "dnsConfig", s.dns_config, [&](const Json& e, const FieldPath& ep, PodDNSConfig& d) {
        r.strings(e, ep, "nameservers", d.nameservers);
        r.strings(e, ep, "searches", d.searches);
        // PodDNSConfigOption {name, value}, kept as "name" or "name:value".
        r.list(e, ep, "options", d.options, [&](const Json& o, const FieldPath& op, std::string& opt) {
            if (!r.object(o, op)) return;
            std::string name, value;
            r.str(o, op, "name", name);
            r.str(o, op, "value", value);
            opt = value.empty() ? name : name + ":" + value;
        });
    });
    r.list(v, p, "hostAliases", s.host_aliases, [&](const Json& e, const FieldPath& ep, PodHostAlias& a) {
        if (!r.object(e, ep)) return;
        r.str(e, ep, "ip", a.ip);
        r.strings(e, ep, "hostnames", a.hostnames);
    });
    r.nested(v, p, "securityContext", s.security_context,
             [&](const Json& e, const FieldPath& ep, PodSecurityContext& sc) {
                 decode_pod_security_context(r, e, ep, sc);
             });
    r.str(v, p, "serviceAccountName", s.service_account_name);
    r.str(v, p, "priorityClassName", s.priority_class_name);
    r.str(v, p, "schedulerName", s.scheduler_name);
}

}  // namespace

void decode_pod_template(Reader& r, const Json& v, const FieldPath& p, PodTemplateSpec& t) {
    if (!r.object(v, p)) return;
    if (const Json* m = Reader::member(v, "metadata")) decode_meta(r, *m, p.child("metadata"), t.metadata);
    if (const Json* s = Reader::member(v, "spec")) decode_pod_spec(r, *s, p.child("spec"), t.spec);
}

}  // namespace daemonlet::detail
