package dev.varve.engine;

import java.util.List;
import java.util.function.Consumer;

/** Applies batches of {@link KillWorkload} in-process. */
final class DeterministicReplayTestSupport {
    private DeterministicReplayTestSupport() {
    }

    static void workload(Varve store, long from, long to) {
        for (long i = from; i < to; i++) store.write(batch(i));
    }

    /** Batch {@code i} of the workload, as the argument of {@link Varve#write} or {@link Varve#writeAndSnapshot}. */
    static Consumer<WriteBatch> batch(long i) {
        List<KillWorkload.Op> ops = KillWorkload.batch(i);
        return b -> {
            for (KillWorkload.Op op : ops) {
                if (op.value() == null) b.remove(op.table(), op.key());
                else b.put(op.table(), op.key(), op.value());
            }
        };
    }
}
