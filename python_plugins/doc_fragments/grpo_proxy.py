"""The proxy option of every module that reaches out (pip, git, the hub): one text for each."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
options:
  proxy:
    description:
      - The proxy to reach the internet through, with the keys C(http_proxy), C(https_proxy) (URLs with a scheme,
        http, https, socks5 or socks5h, and a host) and C(no_proxy) (a comma-separated list of hosts, domains and
        address blocks that bypass it), each optional; C({}) is none (the environment's own, if any).
      - It reaches the processes and libraries that download (pip, git, huggingface_hub) as their environment,
        C(HTTP_PROXY), C(HTTPS_PROXY), C(NO_PROXY) and their lower-case forms, never a command line. It may hold a
        password; its values are masked in the result. A proxy that is not one fails naming this option.
    type: dict
    default: {}
"""
