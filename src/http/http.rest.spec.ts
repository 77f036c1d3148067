import { nextPageLink } from './http.rest';

/** What the link was before it was remembered: the request URL with its cursor set. */
function byUrl(originalUrl: string, cursor: string): string {
  const url = new URL(originalUrl, 'http://placeholder');
  url.searchParams.set('cursor', cursor);
  return `<${url.pathname}${url.search}>; rel="next"`;
}

describe('nextPageLink', () => {
  const cursors = ['WyIyMDI2LTExLTI0VDA2OjAwOjAwLjAwMFoiLCJhIl0', 'a-b_c', 'has space', 'a+b/c=', 'é'];
  const urls = [
    '/api/v1/media',
    '/api/v1/media?limit=50',
    '/api/v1/media?cursor=old&limit=2',
    '/api/v1/media?limit=2&cursor=a&cursor=b',
    '/api/v1/media?tags=a%20b,c&excludeTags=x+y',
    '/api/v1/media?q=nextPageCursorMark',
    '/api/v1/media?a=%zz',
  ];

  it.each(urls)('gives %s the link URL itself would, first and when remembered', (url) => {
    for (let round = 0; round < 2; round++)
      for (const cursor of cursors) expect(nextPageLink(url, cursor)).toBe(byUrl(url, cursor));
  });
});
