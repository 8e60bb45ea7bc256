package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code retention.policy}: what a writable open records is read back exactly, and any damage is named with its offset. */
@Timeout(120)
class RetentionFileTest {
    private static final FileIOFactory IO = FileIOFactory.standard();

    @TempDir
    Path dir;

    @Test
    void everyPolicyIsReadBackAsRecorded() {
        assertEquals(Optional.empty(), RetentionFile.read(IO, dir), "none recorded");
        for (RankTreePolicy p : List.of(RankTreePolicy.keepEverything(), RankTreePolicy.levels(Retention.keepLast(16)),
                RankTreePolicy.levels(Retention.keepLast(60), Retention.keepFor(Duration.ofHours(24)), Retention.keepAll()).withBudget(10L << 30),
                RankTreePolicy.levels(Retention.keepFor(Duration.ofMillis(1500))).withBudget(1))) {
            RetentionFile.record(IO, dir, p);
            assertEquals(Optional.of(p), RetentionFile.read(IO, dir));
        }
    }

    @Test
    void aFlippedByteOrACutFileIsNamedWithItsOffset() throws IOException {
        RankTreePolicy p = RankTreePolicy.levels(Retention.keepLast(60), Retention.keepAll()).withBudget(1L << 30);
        RetentionFile.record(IO, dir, p);
        Path file = dir.resolve(RetentionFileDescriptor.FILE);
        byte[] good = Files.readAllBytes(file);
        for (int i = 0; i < good.length; i++) {
            byte[] bad = good.clone();
            bad[i] ^= 0x04;
            Files.write(file, bad);
            CorruptionException e = assertThrows(CorruptionException.class, () -> RetentionFile.read(IO, dir), "byte " + i);
            assertEquals(file, e.file());
            assertTrue(e.offset() >= 0 && e.offset() < good.length, "byte " + i + ": " + e.getMessage());
        }
        Files.write(file, java.util.Arrays.copyOf(good, good.length - 1));
        assertThrows(CorruptionException.class, () -> RetentionFile.read(IO, dir));
        RetentionFile.record(IO, dir, p); // a writable open replaces a damaged file with its own policy
        assertEquals(Optional.of(p), RetentionFile.read(IO, dir));
    }
}
