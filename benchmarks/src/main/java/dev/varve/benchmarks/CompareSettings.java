package dev.varve.benchmarks;

import dev.varve.config.WalSyncMode;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What every system in one comparison run is given: the same load, memory, page size, partitions, checkpoint period
 * and durability. Travels to the child JVMs as {@code key=value} arguments.
 *
 * @param seconds               measured seconds per phase
 * @param warmupSeconds         unreported warm-up of each write phase at the start of each child JVM, in rounds until the JIT settles
 * @param keys                  key range of the random loads
 * @param rate                  puts per second of the fixed-rate phases (all threads together)
 * @param batchSize             puts per batch in the batch phases
 * @param threads               writer threads
 * @param regionBytes           page memory: Varve's data region, Ignite's data region, H2's page cache
 * @param checkpointBufferBytes Varve's checkpoint buffer and Ignite's checkpoint page buffer
 * @param checkpointMillis      checkpoint period of Varve and Ignite
 * @param pageSize              page size of Varve and Ignite
 * @param partitions            partitions of Varve's table and of Ignite's cache
 * @param sync                  durability of every write: FSYNC or LOG_ONLY
 */
record CompareSettings(int seconds, int warmupSeconds, long keys, int rate, int batchSize, int threads, long regionBytes,
                       long checkpointBufferBytes, long checkpointMillis, int pageSize, int partitions, WalSyncMode sync) {
    static final int MIN_VALUE_BYTES = 100;
    static final int MAX_VALUE_BYTES = 300;
    static final int CHECKPOINT_THREADS = 2;

    CompareSettings withSync(WalSyncMode s) {
        return new CompareSettings(seconds, warmupSeconds, keys, rate, batchSize, threads, regionBytes, checkpointBufferBytes,
                checkpointMillis, pageSize, partitions, s);
    }

    CompareSettings withThreads(int t) {
        return new CompareSettings(seconds, warmupSeconds, keys, rate, batchSize, t, regionBytes, checkpointBufferBytes,
                checkpointMillis, pageSize, partitions, sync);
    }

    List<String> toArgs() {
        List<String> a = new ArrayList<>();
        a.add("seconds=" + seconds);
        a.add("warmupSeconds=" + warmupSeconds);
        a.add("keys=" + keys);
        a.add("rate=" + rate);
        a.add("batchSize=" + batchSize);
        a.add("threads=" + threads);
        a.add("regionBytes=" + regionBytes);
        a.add("checkpointBufferBytes=" + checkpointBufferBytes);
        a.add("checkpointMillis=" + checkpointMillis);
        a.add("pageSize=" + pageSize);
        a.add("partitions=" + partitions);
        a.add("sync=" + sync.name());
        return a;
    }

    static CompareSettings fromArgs(List<String> args) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String a : args) {
            int eq = a.indexOf('=');
            if (eq > 0) m.put(a.substring(0, eq), a.substring(eq + 1));
        }
        return new CompareSettings(Integer.parseInt(m.get("seconds")), Integer.parseInt(m.get("warmupSeconds")),
                Long.parseLong(m.get("keys")), Integer.parseInt(m.get("rate")), Integer.parseInt(m.get("batchSize")),
                Integer.parseInt(m.get("threads")), Long.parseLong(m.get("regionBytes")), Long.parseLong(m.get("checkpointBufferBytes")),
                Long.parseLong(m.get("checkpointMillis")), Integer.parseInt(m.get("pageSize")), Integer.parseInt(m.get("partitions")),
                WalSyncMode.valueOf(m.get("sync")));
    }
}
