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
}
