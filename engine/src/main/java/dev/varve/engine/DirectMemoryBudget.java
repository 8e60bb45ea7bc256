package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.memory.DirectMemory;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The direct memory an open allocates (the data region, the checkpoint buffer, the capture buffer and, under
 * {@code FSYNC}, the WAL's staging copy of a segment) against the JVM's limit on direct memory, checked before a
 * writable open creates anything: an open whose buffers cannot fit under the limit whatever else the JVM holds would
 * be refused anyway when it allocates them, and by then a new store's directory, lock file and archive exist.
 *
 * <p>Only a certain failure is refused here: what other stores or libraries of the JVM hold at the moment is not
 * counted (it may be given back by the collection the JDK runs when a reservation fails), so an open that fits the
 * limit but not what is free is still refused when it allocates, naming the setting, as before. A JVM that does not
 * say its limit (no HotSpot diagnostic MBean) is not checked here.
 */
final class DirectMemoryBudget {
    private DirectMemoryBudget() {
    }

    /** Refuses {@code config} when the direct memory its open allocates is over the JVM's limit, naming the settings. */
    static void refuseOverLimit(VarveConfig config) {
        long limit = DirectMemory.limit();
        if (limit > 0) refuseOver(config, limit);
    }

    /** As above against {@code limit} bytes. */
    private static void refuseOver(VarveConfig config, long limit) {
        Map<String, Long> wanted = wanted(config);
        long total = 0;
        for (Map.Entry<String, Long> e : wanted.entrySet()) {
            if (e.getValue() > limit) throw overLimit(e.getKey() + " of " + e.getValue() + " bytes", e.getKey(), limit);
            total += e.getValue();
        }
        if (total > limit) {
            StringBuilder sum = new StringBuilder();
            for (Map.Entry<String, Long> e : wanted.entrySet()) sum.append(sum.length() == 0 ? "" : " + ").append(e.getKey()).append(' ').append(e.getValue());
            throw overLimit("direct memory of " + total + " bytes in all (" + sum + ")", "them", limit);
        }
    }

    /**
     * What an open of {@code config} allocates off-heap, by setting, as the allocations round it (whole pages: the
     * region and the two buffers hold only whole pages).
     */
    private static Map<String, Long> wanted(VarveConfig config) {
        long page = config.pageSize();
        Map<String, Long> wanted = new LinkedHashMap<>();
        wanted.put("dataRegionSize", config.dataRegionSize() / page * page);
        wanted.put("checkpointBufferSize", config.checkpointBufferSize() / page * page);
        wanted.put("captureBufferSize", config.captureBufferSize() / page * page);
        if (config.walSyncMode() == WalSyncMode.FSYNC) wanted.put("walSegmentSize", config.walSegmentSize());
        return wanted;
    }

    private static IllegalArgumentException overLimit(String what, String lower, long limit) {
        return new IllegalArgumentException(what + " cannot be allocated (the JVM's limit on direct memory is "
                + limit + " bytes); lower " + lower + ", or raise the JVM's -Xmx / -XX:MaxDirectMemorySize");
    }
}
