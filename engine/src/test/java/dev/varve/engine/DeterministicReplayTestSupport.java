package dev.varve.engine;

import java.util.List;

/** Applies batches of {@link KillWorkload} in-process. */
final class DeterministicReplayTestSupport {
    private DeterministicReplayTestSupport() {
    }

    static void workload(Varve store, long from, long to) {
        for (long i = from; i < to; i++) {
            List<KillWorkload.Op> ops = KillWorkload.batch(i);
            store.write(b -> {
                for (KillWorkload.Op op : ops) {
                    if (op.value() == null) b.remove(op.table(), op.key());
                    else b.put(op.table(), op.key(), op.value());
                }
            });
        }
    }
}
