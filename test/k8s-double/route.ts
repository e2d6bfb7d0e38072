// What a request's path names, as the API server's RequestInfo reads it: a
// discovery document, a resource (group, version, plural, namespace, name,
// subresource, watch) or a non-resource URL; and the RBAC verb of a resource
// request.

import { apiGroup, apiGroupList, apiResourceList, apiVersions } from './resources.js';

export interface ResourcePath {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string;
  subresource: string;
  watch: boolean;
}

export type Route =
  | { kind: 'doc'; body: object | undefined }
  | { kind: 'resource'; path: ResourcePath }
  | { kind: 'nonresource' };

export function route(pathname: string): Route {
  const seg = pathname.split('/').filter((s) => s !== '');
  let group: string;
  let version: string;
  let rest: string[];
  if (seg[0] === 'api') {
    if (seg.length === 1) return { kind: 'doc', body: apiVersions() };
    group = '';
    version = seg[1] ?? '';
    rest = seg.slice(2);
  } else if (seg[0] === 'apis') {
    if (seg.length === 1) return { kind: 'doc', body: apiGroupList() };
    if (seg.length === 2) return { kind: 'doc', body: apiGroup(seg[1] ?? '') };
    group = seg[1] ?? '';
    version = seg[2] ?? '';
    rest = seg.slice(3);
  } else return { kind: 'nonresource' };
  if (rest.length === 0) return { kind: 'doc', body: apiResourceList(group, version) };
  let watch = false;
  if (rest[0] === 'watch') {
    watch = true;
    rest = rest.slice(1);
  }
  let namespace = '';
  if (
    rest[0] === 'namespaces' &&
    rest.length >= 3 &&
    !(group === '' && rest.length === 3 && (rest[2] === 'status' || rest[2] === 'finalize'))
  ) {
    namespace = rest[1] ?? '';
    rest = rest.slice(2);
  }
  const path: ResourcePath = {
    group,
    version,
    plural: rest[0] ?? '',
    namespace,
    name: rest[1] ?? '',
    subresource: rest[2] ?? '',
    watch,
  };
  // A request on a namespace itself is in that namespace (RBAC's RequestInfo).
  if (group === '' && path.plural === 'namespaces' && path.name !== '') path.namespace = path.name;
  return { kind: 'resource', path };
}

export function verbOf(method: string, path: ResourcePath, query: URLSearchParams): string {
  switch (method) {
    case 'GET':
    case 'HEAD':
      if (path.name === '') return path.watch || query.get('watch') === 'true' ? 'watch' : 'list';
      return 'get';
    case 'POST':
      return 'create';
    case 'PUT':
      return 'update';
    case 'PATCH':
      return 'patch';
    case 'DELETE':
      return path.name === '' ? 'deletecollection' : 'delete';
    default:
      return method.toLowerCase();
  }
}
