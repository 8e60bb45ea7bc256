package dev.varve.engine;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A data set of ~80 MiB (5x the 16 MiB data region) written and read back by a child JVM whose heap is capped at
 * 128 MiB: pages, not the Java heap, hold the data (the child checks that pages were evicted and read back).
 */
@Timeout(600)
class LargeDataSetTest {
    @TempDir
    Path dir;

    @Test
    void dataSetFiveTimesTheRegionWithASmallHeap() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-Xmx128m", 170, FixtureLargeDataSet.class, dir.resolve("store").toString());
        System.out.println(r.describe());
        assertEquals(0, r.exitCode(), r.describe());
        assertTrue(r.output().contains("LARGE-OK"), r.describe());
        assertTrue(r.output().contains("before close: every key and a full scan checked"), r.describe());
        assertTrue(r.output().contains("after reopen: every key and a full scan checked"), r.describe());
    }
}
