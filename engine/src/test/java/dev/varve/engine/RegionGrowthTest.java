package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The data region is allocated as the store uses it, not at open: a store holds direct memory for the pages it has
 * touched, and when the JVM runs short of direct memory after open (other stores or libraries took it), the region
 * stops growing and the store goes on within what it has, evicting clean pages, every value read back as written.
 * Growth leaves the JVM some direct memory, so the checkpoints that make eviction possible get their buffers.
 * In a child JVM, whose direct memory the test bounds and measures alone.
 */
@Timeout(240)
class RegionGrowthTest {
    private static final long REGION = 128L << 20;

    @TempDir
    Path dir;

    @Test
    void aStoreShortOfDirectMemoryAfterOpenStopsGrowingItsRegionAndKeepsEveryValue() {
        // the open's buffers (128 + 8 + 1 MiB) fit the limit, so the open is not refused; 40 MiB held by "another
        // library" leaves room for part of the region only
        FixtureChildJvm.Result r = FixtureChildJvm.run("-XX:MaxDirectMemorySize=160m", 200, ShortOfDirectMemory.class,
                dir.resolve("store").toString());
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("VERIFIED " + ShortOfDirectMemory.KEYS), r::describe);
        // the first chunks of the region (the second is allocated ahead as soon as the first is used) and the two
        // buffers, not the whole region: before, the open allocated the region and was refused
        long atOpen = figure(r, "DIRECT_AT_OPEN");
        assertTrue(atOpen < REGION, "direct memory an open holds: " + atOpen);
        assertTrue(r.output().contains("the data region stops growing at"), "the operator is told, naming the setting: " + r.describe());
        // and sees it in the metrics: the region allocated grew from open to where it stopped, short of the setting
        long atOpenAllocated = figure(r, "ALLOCATED_AT_OPEN");
        long atEnd = figure(r, "ALLOCATED_AT_END");
        assertTrue(atOpenAllocated < atEnd && atEnd < REGION, atOpenAllocated + " then " + atEnd + " of " + REGION);
        assertTrue(r.output().contains("(" + atEnd + " bytes of dataRegionSize " + REGION + ")"), "the warning and the metric agree: " + r.describe());
        assertTrue(r.output().contains("lower dataRegionSize, or raise the JVM's -Xmx / -XX:MaxDirectMemorySize"), r::describe);
        // it stopped with an eighth of the JVM's 160 MiB of direct memory left free: grown to the last megabyte, a
        // checkpoint could not get its recovery-file buffer, failed, and the store refused every checkpoint after it
        assertTrue(r.output().contains("would leave less than " + (20 << 20) + " bytes of the JVM's " + (160 << 20) + " bytes of direct memory free"),
                r::describe);
        assertTrue(r.output().contains("CLOSED"), r::describe);
    }

    private static long figure(FixtureChildJvm.Result r, String name) {
        Matcher m = Pattern.compile(name + " (\\d+)").matcher(r.output());
        assertTrue(m.find(), name + " missing: " + r.describe());
        return Long.parseLong(m.group(1));
    }

    /** Child JVM main: args {@code dir}; run under {@code -XX:MaxDirectMemorySize=160m}. */
    public static final class ShortOfDirectMemory {
        static final int KEYS = 100_000;
        /** Direct memory another library of the JVM holds. */
        static ByteBuffer ballast;

        public static void main(String[] args) throws Exception {
            ballast = ByteBuffer.allocateDirect(40 << 20);
            long before = directBytes();
            VarveConfig cfg = VarveConfig.builder().path(Path.of(args[0])).pageSize(4096).dataRegionSize(REGION)
                    .checkpointBufferSize(8L << 20).captureBufferSize(1L << 20).walSyncMode(WalSyncMode.LOG_ONLY)
                    .walSegmentSize(16L << 20).checkpointFrequency(Duration.ofDays(1)).build();
            try (Varve store = Varve.open(cfg)) {
                System.out.println("DIRECT_AT_OPEN " + (directBytes() - before));
                System.out.println("ALLOCATED_AT_OPEN " + store.metrics().dataRegionAllocatedBytes());
                Table t = store.table("t");
                // about 100 MiB of values: more pages than the region the JVM can give
                for (int i = 0; i < KEYS; i++) t.put(key(i), FixtureSupport.bytes(i, 1000));
                int verified = 0;
                for (int i = 0; i < KEYS; i++) {
                    if (!Arrays.equals(FixtureSupport.bytes(i, 1000), t.get(key(i)))) throw new AssertionError("key " + i + " reads wrong");
                    verified++;
                }
                System.out.println("VERIFIED " + verified);
                System.out.println("ALLOCATED_AT_END " + store.metrics().dataRegionAllocatedBytes());
            }
            System.out.println("CLOSED");
        }

        private static byte[] key(int i) {
            return FixtureSupport.utf8(String.format("key-%08d", i));
        }

        private static long directBytes() {
            for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
                if (pool.getName().equals("direct")) return pool.getMemoryUsed();
            }
            throw new IllegalStateException("no direct buffer pool");
        }
    }
}
