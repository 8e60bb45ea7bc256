package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.varve.config.ConfigLimits;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.openjdk.jmh.annotations.Param;

/** The JMH suites' parameters measure what their comments and the README say they do. */
@Timeout(30)
class JmhParamsTest {
    private static List<String> params(Class<?> state, String field) throws NoSuchFieldException {
        return List.of(state.getField(field).getAnnotation(Param.class).value());
    }

    @Test
    void snapshotBenchmarkComparesTheDefaultDiffChainWithWholePages() throws Exception {
        assertEquals(List.of(String.valueOf(ConfigLimits.SNAPSHOT_DIFF_CHAIN_DEFAULT), "0"),
                params(SnapshotBenchmark.UpdateState.class, "snapshotDiffChain"));
    }

    @Test
    void sptBuildBenchmarkBuildsOnTheStoresSkippyNodes() throws Exception {
        // at 256 mappings a node the 99/1 hot set (1,000 pages) exceeds a node and Skippy gains nothing (452 against 456 ms at
        // heights 3 and 0), at the store's 4,096 it is 27x: the suite's default measured a store nobody runs
        assertEquals(List.of(String.valueOf(ConfigLimits.SKIPPY_NODE_ENTRIES_DEFAULT)), params(SptBuildBenchmark.class, "nodeEntries"));
    }
}
