// Types shared by the parts of the test API server (storage, rules, authentication and authorization).

/** Who made a request, as kube-apiserver's authenticators report it. */
export interface UserInfo {
  username: string;
  groups: string[];
  uid?: string;
  /** Token claims of a service account token (pod binding), for NodeRestriction-style checks. */
  extra?: Record<string, string[]>;
}

/** A resource request as the authorizer and admission see it (kube-apiserver's authorizer.Attributes). */
export interface RequestAttributes {
  user: UserInfo;
  /** get, list, watch, create, update, patch, delete, deletecollection */
  verb: string;
  /** '' for the core group */
  apiGroup: string;
  apiVersion: string;
  /** plural, lower case: pods, nodes, leases, ... */
  resource: string;
  /** status, binding, log, token, or '' */
  subresource: string;
  /** '' for cluster-scoped resources and for cluster-wide list/watch */
  namespace: string;
  /** '' for list, watch and create of a collection */
  name: string;
  /** fieldSelector of a list/watch, e.g. spec.nodeName=n1 */
  fieldSelector?: string;
}

/** What the authorizer and admission may read of the cluster's state (a read-only view of the store). */
export interface ClusterView {
  /** The current object, or undefined. `namespace` is '' for cluster-scoped resources. */
  get(resource: string, namespace: string, name: string): Record<string, unknown> | undefined;
  /** Every object of a resource, optionally in one namespace. */
  list(resource: string, namespace?: string): Record<string, unknown>[];
}

/** One problem with an object's field, as kube-apiserver's field.Error (becomes a Status cause). */
export interface FieldError {
  /** metav1.CauseType: FieldValueRequired, FieldValueInvalid, FieldValueForbidden, FieldValueNotSupported, FieldValueDuplicate, FieldValueTooLong, FieldValueTypeInvalid */
  type: string;
  /** JSON path such as spec.containers[0].image */
  field: string;
  /** Detail without the field, e.g. "Required value" or `Invalid value: "x": must be ...` */
  message: string;
}

/** An authorization or admission decision; the reason is what the Forbidden Status says. */
export interface Decision {
  allowed: boolean;
  reason: string;
}
