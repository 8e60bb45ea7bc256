package dev.varve.engine;

import dev.varve.config.VarveConfig;
import dev.varve.core.io.UnforcedFileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README allows a checkpoint buffer and a capture buffer of up to 64 GiB, but both were one direct
 * {@code ByteBuffer}, whose capacity is an int: anything from 2 GiB up was cut to just under 2 GiB without a word
 * (here 2 GiB of 16 KiB pages gave 131,071 slots, not 131,072). Run in a child JVM whose direct memory can hold it.
 */
@Timeout(180)
class LargeSlotBufferTest {
    private static final long GiB = 1L << 30;
    private static final int PAGE = 16384;

    @TempDir
    Path dir;

    @Test
    void aCheckpointBufferOf2GiBHasEverySlotItAskedFor() {
        FixtureChildJvm.Result r = FixtureChildJvm.run("-Xmx2200m", 150, OpenWithLargeBuffer.class, dir.resolve("s").toString());
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("slots " + (2 * GiB / PAGE) + " "), r::describe);
        assertTrue(r.output().contains("read back ok"), r::describe);
    }

    /** Child JVM main: opens a store with a 2 GiB checkpoint buffer, prints its slots, writes through a checkpoint. */
    public static final class OpenWithLargeBuffer {
        public static void main(String[] args) {
            FixtureChildJvm.watchdog(120, "the large-buffer store");
            VarveConfig config = VarveConfig.builder().path(Path.of(args[0])).pageSize(PAGE).dataRegionSize(32L << 20)
                    .checkpointBufferSize(2 * GiB).build();
            try (Varve store = Varve.open(config, UnforcedFileIOFactory.INSTANCE)) {
                System.out.println("slots " + store.metrics().checkpointBufferPages() + " ");
                Table t = store.table("t");
                for (int i = 0; i < 100; i++) t.put(FixtureSupport.utf8("k" + i), new byte[3000]);
                store.checkpoint().join();
                if (t.get(FixtureSupport.utf8("k7")).length == 3000) System.out.println("read back ok");
            }
        }
    }
}
