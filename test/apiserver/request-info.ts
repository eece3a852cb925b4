// Reads a request's URL and method as kube-apiserver's RequestInfoFactory does: resource or non-resource, verb, group,
// version, namespace, resource, name, subresource.

export interface RequestInfo {
  isResourceRequest: boolean;
  path: string;
  /** get, list, watch, create, update, patch, delete, deletecollection; for non-resource requests the lower-case method. */
  verb: string;
  apiPrefix: string;
  apiGroup: string;
  apiVersion: string;
  namespace: string;
  resource: string;
  subresource: string;
  name: string;
  /** Path segments after the subresource (none are served). */
  extra: string[];
}

/** Namespace subresources, which keep `namespaces` as the resource (`/namespaces/x/status`). */
const NAMESPACE_SUBRESOURCES = new Set(['status', 'finalize']);

export function requestInfo(method: string, url: URL): RequestInfo {
  const path = url.pathname;
  const nonResource: RequestInfo = {
    isResourceRequest: false,
    path,
    verb: method.toLowerCase(),
    apiPrefix: '',
    apiGroup: '',
    apiVersion: '',
    namespace: '',
    resource: '',
    subresource: '',
    name: '',
    extra: [],
  };
  const segments = path.split('/').filter((s) => s !== '');
  let parts: string[];
  let apiGroup = '';
  let apiVersion: string;
  if (segments[0] === 'api' && segments.length >= 3) {
    apiVersion = segments[1] as string;
    parts = segments.slice(2);
  } else if (segments[0] === 'apis' && segments.length >= 4) {
    apiGroup = segments[1] as string;
    apiVersion = segments[2] as string;
    parts = segments.slice(3);
  } else {
    return nonResource;
  }
  const info: RequestInfo = { ...nonResource, isResourceRequest: true, apiPrefix: segments[0] as string, apiGroup, apiVersion };
  switch (method) {
    case 'POST':
      info.verb = 'create';
      break;
    case 'GET':
    case 'HEAD':
      info.verb = 'get';
      break;
    case 'PUT':
      info.verb = 'update';
      break;
    case 'PATCH':
      info.verb = 'patch';
      break;
    case 'DELETE':
      info.verb = 'delete';
      break;
    default:
      info.verb = '';
  }
  if (parts[0] === 'namespaces' && parts.length > 1) {
    info.namespace = parts[1] as string;
    if (parts.length > 2 && !NAMESPACE_SUBRESOURCES.has(parts[2] as string)) parts = parts.slice(2);
  }
  info.resource = parts[0] ?? '';
  info.name = parts[1] ?? '';
  info.subresource = parts[2] ?? '';
  info.extra = parts.slice(3);
  if (info.name === '' && info.verb === 'get') {
    const watch = url.searchParams.get('watch');
    info.verb = watch !== null && watch.toLowerCase() !== 'false' && watch !== '0' ? 'watch' : 'list';
  }
  if (info.name === '' && info.verb === 'delete') info.verb = 'deletecollection';
  return info;
}
