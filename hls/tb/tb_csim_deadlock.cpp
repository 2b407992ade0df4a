// The C simulation's streams against a FIFO that is too small (UG1399, "Cosim Deadlock
// Detection": the dataflow example that deadlocks in RTL co-simulation).
//
//   tb_csim_deadlock <threads|lockstep|sequential> <depth of data_channel1> [items]
//
// producer writes `items` (default 10) values into data_channel1 before it writes one into
// data_channel2; consumer reads data_channel2 first, then data_channel1. A data_channel1 of
// fewer than `items` slots blocks the producer before it writes data_channel2, while the
// consumer waits for data_channel2: a deadlock, which the C simulation reports (naming both
// streams) and the run fails. With hls4ml's or Vitis's own C-simulation streams (unbounded,
// the processes one after the other) it passes whatever the depth.
//
// Exit status: 0 the region ran and the consumer got the right values; 3 the watchdog
// reported a deadlock (its report on stdout); 1 wrong values; 2 usage.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csim/zq_csim.h"

namespace {

constexpr int DECLARED = 10;  // the depth the design declares for data_channel1

void producer(zq_csim::stream<int, DECLARED>& ch1, zq_csim::stream<int, 2>& ch2, int items) {
    for (int i = 0; i < items; i++) {
        ch1.write(i);
        zq_csim::tick();
    }
    ch2.write(items);
    zq_csim::tick();
}

void consumer(zq_csim::stream<int, DECLARED>& ch1, zq_csim::stream<int, 2>& ch2, int items, long long& sum) {
    sum = ch2.read();
    zq_csim::tick();
    for (int i = 0; i < items; i++) {
        sum += ch1.read();
        zq_csim::tick();
    }
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        printf("usage: %s <threads|lockstep|sequential> <depth of data_channel1> [items]\n", argv[0]);
        return 2;
    }
    const char* mode = argv[1];
    const int depth = atoi(argv[2]);
    const int items = argc > 3 ? atoi(argv[3]) : DECLARED;
    if (!strcmp(mode, "threads")) zq_csim::set_mode(zq_csim::MODE_THREADS);
    else if (!strcmp(mode, "lockstep")) zq_csim::set_mode(zq_csim::MODE_LOCKSTEP);
    else if (!strcmp(mode, "sequential")) zq_csim::set_mode(zq_csim::MODE_SEQUENTIAL);
    else {
        printf("unknown mode '%s'\n", mode);
        return 2;
    }
    zq_csim::set_depth_override("data_channel1", depth);
    long long sum = -1;
    try {
        zq_csim::stream<int, DECLARED> ch1("data_channel1");
        zq_csim::stream<int, 2> ch2("data_channel2");
        zq_csim::Region region;
        region.add("proc_1", [&] { producer(ch1, ch2, items); });
        region.add("proc_2", [&] { consumer(ch1, ch2, items, sum); });
        region.run();
    } catch (const zq_csim::Deadlock& e) {
        printf("%s", e.what());
        return 3;
    }
    const long long want = (long long)items + (long long)items * (items - 1) / 2;
    printf("tb_csim_deadlock: %s mode, depth %d, %d items: %s (%lld)\n", mode, depth, items,
           sum == want ? "PASS" : "WRONG", sum);
    return sum == want ? 0 : 1;
}
