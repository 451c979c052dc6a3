// The proxy rules (src/aws/proxy-env.ts) against the AWS CLI's, which are botocore's and, underneath, CPython's:
// - botocore/utils.py get_environ_proxies / should_bypass_proxies (boto/botocore at 0e6e240, 2026-08-07), which call
//   urllib.request getproxies() and proxy_bypass(urlparse(url).netloc);
// - CPython Lib/urllib/request.py getproxies_environment() and proxy_bypass_environment() (3.11.7 and main alike),
//   with urllib.parse _splitport();
// - botocore/httpsession.py ProxyConfiguration: proxy_url_for (by scheme), _fix_proxy_url (http:// when no scheme),
//   proxy_headers_for (Proxy-Authorization Basic only with both a user and a password).
// Each expectation below is what those functions return for the same input (checked with python3 -c on 3.11.7).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AwsNetwork } from '../../../src/aws/network.ts';
import { bypassesProxy, proxyVariables, readProxyEnv } from '../../../src/aws/proxy-env.ts';

describe('which proxy variable counts (getproxies_environment)', () => {
  it('reads <scheme>_proxy in any case, and the lower-case name wins', () => {
    const vars = proxyVariables({ HTTPS_PROXY: 'http://upper:1', https_proxy: 'http://lower:2', HTTP_PROXY: 'http://h:3' });
    assert.deepEqual(vars.get('https'), { variable: 'https_proxy', value: 'http://lower:2' });
    assert.deepEqual(vars.get('http'), { variable: 'HTTP_PROXY', value: 'http://h:3' });
  });

  it('wins whatever the order of the environment', () => {
    const vars = proxyVariables({ https_proxy: 'http://lower:2', HTTPS_PROXY: 'http://upper:1' });
    assert.equal(vars.get('https')?.variable, 'https_proxy');
  });

  it('an empty lower-case variable removes the upper-case one; an empty upper-case one is nothing', () => {
    assert.equal(proxyVariables({ HTTPS_PROXY: 'http://upper:1', https_proxy: '' }).get('https'), undefined);
    assert.equal(proxyVariables({ HTTPS_PROXY: '', https_proxy: 'http://lower:2' }).get('https')?.value, 'http://lower:2');
    assert.equal(proxyVariables({ HTTPS_PROXY: '' }).get('https'), undefined);
  });

  it('a mixed-case prefix with a lower-case _proxy counts as lower case (Https_proxy)', () => {
    assert.equal(proxyVariables({ HTTPS_PROXY: 'http://u:1', Https_proxy: 'http://m:2' }).get('https')?.variable, 'Https_proxy');
  });

  it('under CGI (REQUEST_METHOD set) an upper-case HTTP_PROXY is ignored, a lower-case one is not (CVE-2016-1000110)', () => {
    assert.equal(proxyVariables({ REQUEST_METHOD: 'GET', HTTP_PROXY: 'http://evil:1' }).get('http'), undefined);
    assert.equal(proxyVariables({ REQUEST_METHOD: 'GET', http_proxy: 'http://ok:1' }).get('http')?.value, 'http://ok:1');
    assert.equal(proxyVariables({ REQUEST_METHOD: 'GET', HTTPS_PROXY: 'http://p:1' }).get('https')?.value, 'http://p:1');
  });

  it('NO_PROXY and no_proxy follow the same rule', () => {
    assert.deepEqual(proxyVariables({ NO_PROXY: 'a', no_proxy: 'b' }).get('no'), { variable: 'no_proxy', value: 'b' });
    assert.deepEqual(proxyVariables({ NO_PROXY: 'a' }).get('no'), { variable: 'NO_PROXY', value: 'a' });
  });
});

describe('the proxy URL (ProxyConfiguration)', () => {
  it('takes http:// when the URL has no scheme, or starts with //', () => {
    const { proxies } = readProxyEnv({ HTTPS_PROXY: 'proxy.corp:3128', HTTP_PROXY: '//proxy.corp:8080' });
    assert.equal(proxies.https?.url.href, 'http://proxy.corp:3128/');
    assert.equal(proxies.http?.url.href, 'http://proxy.corp:8080/');
  });

  it('refuses a URL that does not parse, and a proxy that is not http://, naming the variable', () => {
    assert.deepEqual(readProxyEnv({ HTTPS_PROXY: 'http://[bad' }).problems, [
      'HTTPS_PROXY is not a proxy URL such as http://proxy.example:3128',
    ]);
    assert.deepEqual(readProxyEnv({ https_proxy: 'https://user:secret@tls-proxy:443' }).problems, [
      'https_proxy names a https:// proxy: only an http:// proxy is supported (https://tls-proxy)',
    ]);
  });

  it('sends Proxy-Authorization Basic only with both a user and a password, percent-decoded; names the proxy without them', () => {
    const route = (value: string) =>
      new AwsNetwork(readProxyEnv({ HTTPS_PROXY: value }).proxies).proxyFor(true, 'sqs.us-east-1.amazonaws.com', undefined);
    const withBoth = route('http://us%40er:p%3Ass@proxy:3128');
    assert.equal(withBoth?.authorization, `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`);
    assert.equal(withBoth?.name, 'http://proxy:3128 (HTTPS_PROXY)');
    assert.equal(route('http://user@proxy:3128')?.authorization, undefined);
    assert.equal(route('http://user:@proxy:3128')?.authorization, undefined);
    assert.equal(route('http://proxy')?.port, 80, "urllib3's default port for an http:// proxy");
  });

  it('picks the proxy by the endpoint scheme: HTTPS_PROXY for https, HTTP_PROXY for http, none for the other', () => {
    const only = new AwsNetwork(readProxyEnv({ HTTPS_PROXY: 'http://s:1' }).proxies);
    assert.equal(only.proxyFor(true, 'sqs.eu-west-1.amazonaws.com', undefined)?.host, 's');
    assert.equal(only.proxyFor(false, 'localstack', 4566), undefined);
    const both = new AwsNetwork(readProxyEnv({ HTTPS_PROXY: 'http://s:1', HTTP_PROXY: 'http://h:2' }).proxies);
    assert.equal(both.proxyFor(false, 'localstack', 4566)?.host, 'h');
    assert.equal(new AwsNetwork().proxyFor(true, 'x', undefined), undefined);
  });
});

describe('NO_PROXY (proxy_bypass_environment over the URL netloc)', () => {
  // [NO_PROXY, netloc, bypassed], each as CPython's proxy_bypass_environment(netloc, {'no': NO_PROXY}) answers.
  const cases: [string | undefined, string, boolean][] = [
    [undefined, 'sqs.us-east-1.amazonaws.com', false],
    ['*', 'sqs.us-east-1.amazonaws.com', true],
    // '*' counts only as the whole value: inside a list it is an entry like any other.
    ['*,example.com', 'sqs.us-east-1.amazonaws.com', false],
    [' *', 'sqs.us-east-1.amazonaws.com', false],
    // A suffix at a dot, in any case, with or without leading dots.
    ['amazonaws.com', 'sqs.us-east-1.amazonaws.com', true],
    ['.amazonaws.com', 'sqs.us-east-1.amazonaws.com', true],
    ['..AMAZONAWS.COM', 'SQS.us-east-1.amazonaws.com', true],
    ['amazonaws.com', 'notamazonaws.com', false],
    ['amazonaws.com', 'amazonaws.com', true],
    // Spaces around entries and empty entries are ignored.
    ['  foo.example , , sqs.us-east-1.amazonaws.com ', 'sqs.us-east-1.amazonaws.com', true],
    // An entry with a port matches that port only; one without matches every port.
    ['localhost:4566', 'localhost:4566', true],
    ['localhost:4566', 'localhost:9324', false],
    ['localhost:4566', 'localhost', false],
    ['localhost', 'localhost:9324', true],
    // IP addresses are text: no CIDR, and a suffix at a dot matches (botocore: "ip/cidr entries ... we don't support").
    ['127.0.0.1', '127.0.0.1:9324', true],
    ['127.0.0.0/8', '127.0.0.1', false],
    ['0.0.1', '127.0.0.1', true],
    ['10.0.0.1', '10.0.0.11', false],
    // IPv6 in brackets, as a URL's netloc has it.
    ['[::1]', '[::1]:4566', true],
    ['::1', '[::1]:4566', false],
  ];
  for (const [noProxy, netloc, bypassed] of cases) {
    it(`${JSON.stringify(noProxy)} ${bypassed ? 'bypasses' : 'does not bypass'} ${netloc}`, () => {
      assert.equal(bypassesProxy(noProxy, netloc), bypassed);
    });
  }

  it('is matched on the host and a port that is not the default, whichever client asks', () => {
    const network = new AwsNetwork(
      readProxyEnv({ HTTPS_PROXY: 'http://p:1', NO_PROXY: 'localhost:9443,sqs.eu-west-1.amazonaws.com:443' }).proxies,
    );
    assert.equal(network.proxyFor(true, 'localhost', 9443), undefined);
    assert.ok(network.proxyFor(true, 'localhost', 9444));
    // A URL leaves the default port out, so an entry that writes it does not match (as urlparse's netloc has no :443).
    assert.ok(network.proxyFor(true, 'sqs.eu-west-1.amazonaws.com', 443));
    assert.ok(network.proxyFor(true, 'sqs.eu-west-1.amazonaws.com', undefined));
    const v6 = new AwsNetwork(readProxyEnv({ HTTPS_PROXY: 'http://p:1', NO_PROXY: '[::1]' }).proxies);
    assert.equal(v6.proxyFor(true, '::1', 9443), undefined, 'the SDK agent gives the address without brackets');
    assert.equal(v6.proxyFor(true, '[::1]', 9443), undefined, 'the lean transport gives it with them');
  });

  it('is told in the start-up log with the proxies, never their credentials', () => {
    const network = new AwsNetwork(readProxyEnv({ HTTPS_PROXY: 'http://u:secret@p:1', no_proxy: '.internal' }).proxies);
    assert.deepEqual(network.describe(), { httpsProxy: 'http://p:1 (HTTPS_PROXY)', noProxy: '.internal (no_proxy)' });
    assert.deepEqual(new AwsNetwork(readProxyEnv({ NO_PROXY: 'x' }).proxies).describe(), {});
  });
});
