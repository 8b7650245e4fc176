"""Units, one name each: byte multiples and time conversions. Formatters live in `textfmt`.

Times in a run are int64 nanoseconds; the what-if and the model work in seconds. The names say
the direction: `seconds * NS_PER_S` is nanoseconds, `nanoseconds * S_PER_NS` is seconds.
"""

KIB = 1 << 10
MIB = 1 << 20
GIB = 1 << 30
GB = 1e9  # decimal: network and DMA rates are published in GB/s and Gbps

NS_PER_S = 1e9
S_PER_NS = 1e-9
