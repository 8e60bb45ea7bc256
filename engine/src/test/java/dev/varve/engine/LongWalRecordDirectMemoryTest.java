package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.varve.config.ConfigLimits;
import dev.varve.config.VarveConfig;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The WAL is read through a 1 MiB window of direct memory that a longer record grows to its length (a batch of
 * large values is one record). An open whose JVM cannot hold that buffer is refused naming the segment, the record's
 * offset, the bytes and the JVM option — not with a bare {@code OutOfMemoryError} — and changes nothing: the same
 * directory opens and reads back in a JVM with the room.
 */
@Timeout(180)
class LongWalRecordDirectMemoryTest {
    private static final int VALUES = 16;
    private static final int VALUE_BYTES = 1 << 20;

    @TempDir
    Path root;

    static VarveConfig config(Path dir) {
        return VarveConfig.builder().path(dir).dataRegionSize(48L << 20).checkpointBufferSize(1L << 20)
                .captureBufferSize(1L << 20).walSegmentSize(64L << 20)
                .checkpointFrequency(ConfigLimits.CHECKPOINT_FREQUENCY_MAX)
                .checkpointWalVolume(ConfigLimits.CHECKPOINT_WAL_VOLUME_MAX).build();
    }

    static byte[] value(int i) {
        byte[] v = new byte[VALUE_BYTES];
        Arrays.fill(v, (byte) (i + 1));
        return v;
    }

    @Test
    void anOpenWhoseJvmCannotHoldALongRecordsReadBufferIsRefusedNamingItAndChangesNothing() throws IOException {
        Path live = root.resolve("live");
        Path crashed = root.resolve("crashed");
        try (Varve store = Varve.open(config(live))) {
            store.table("t");
            store.write(b -> {
                for (int i = 0; i < VALUES; i++) b.put("t", new byte[] {(byte) i}, value(i));
            });
            store.sync();
            copyTree(live, crashed); // what a crash leaves: the batch's record in the WAL, no checkpoint past it
        }

        FixtureChildJvm.Result r = FixtureChildJvm.run("-XX:MaxDirectMemorySize=64m", 120, OpenIt.class, crashed.toString());
        assertEquals(0, r.exitCode(), r::describe);
        assertTrue(r.output().contains("REFUSED"), r::describe);
        assertTrue(r.output().contains("needs a buffer of") && r.output().contains("raise -XX:MaxDirectMemorySize"), r::describe);
        assertTrue(r.output().contains("wal-0000000000000000.seg"), r::describe);
        assertFalse(r.output().contains("OutOfMemoryError:"), r::describe);

        try (Varve store = Varve.open(config(crashed))) {
            for (int i = 0; i < VALUES; i++) assertArrayEquals(value(i), store.table("t").get(new byte[] {(byte) i}), "value " + i);
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) Files.createDirectories(target);
                else Files.copy(p, target);
            }
        }
    }

    /**
     * Child JVM main: opens the store in {@code args[0]}, printing OPENED or REFUSED with the message, while 48 of the
     * JVM's 64 MiB of direct memory are held by "another library" (the store's memory is allocated as used, so its own
     * would leave the record's 16 MiB room).
     */
    public static final class OpenIt {
        static ByteBuffer ballast;

        public static void main(String[] args) {
            ballast = ByteBuffer.allocateDirect(48 << 20);
            try {
                Varve.open(config(Path.of(args[0]))).close();
                System.out.println("OPENED");
            } catch (RuntimeException e) {
                System.out.println("REFUSED " + e);
            }
        }
    }
}
