package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.CorruptionException;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The standby's snapshot map as a follow writes it, then damaged: a flipped digit is reported with the file, never
 * read as a mapping to another of the standby's snapshots; only the map's end, where a crash may tear an append, is
 * let go.
 */
@Timeout(120)
class StandbyMapTest {
    @TempDir
    Path dir;

    @Test
    void aFlippedDigitIsReportedAndOnlyATornEndIsLetGo() throws Exception {
        Path standby = dir.resolve("standby");
        Map<Long, Long> written = follow(standby);
        assertTrue(written.size() >= 4, "the image's snapshot and three declared since: " + written);
        Path file = standby.resolve(Standby.SNAPSHOT_MAP);
        byte[] clean = Files.readAllBytes(file);
        assertTrue(new String(clean, StandardCharsets.US_ASCII).startsWith(StandbyMapDescriptor.HEADER), "the map starts with its header");

        // a torn append after the last line: not read, every line still is
        Files.write(file, "12 3".getBytes(StandardCharsets.US_ASCII), StandardOpenOption.APPEND);
        assertEquals(written, Standby.snapshots(standby));
        Files.write(file, clean);

        // a digit of the first line's local id flipped: reported, naming the file
        long firstSender = written.keySet().iterator().next();
        Files.write(file, flipLastDigitOfLocalId(clean, 0));
        CorruptionException e = assertThrows(CorruptionException.class, () -> Standby.localSnapshot(standby, firstSender));
        assertEquals(file, e.file(), e.getMessage());

        // the same in the last line: the end a crash may tear, let go — that line is missing, none maps elsewhere
        List<Long> senders = List.copyOf(written.keySet());
        Files.write(file, flipLastDigitOfLocalId(clean, senders.size() - 1));
        Map<Long, Long> expected = new TreeMap<>(written);
        expected.remove(senders.get(senders.size() - 1));
        assertEquals(expected, Standby.snapshots(standby));
    }

    /** A null directory is named, not a bare NullPointerException from inside. */
    @Test
    void aNullStandbyDirectoryIsNamed() {
        for (org.junit.jupiter.api.function.Executable call : List.<org.junit.jupiter.api.function.Executable>of(
                () -> Standby.snapshots(null), () -> Standby.localSnapshot(null, 1))) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
            assertTrue(e.getMessage().contains("standbyDir"), e.getMessage());
        }
    }

    @Test
    void headersAndVersionOneLines() {
        Path file = dir.resolve("map");
        assertEquals(Map.of(), StandbyMapDescriptor.decode(new byte[0], file), "new");
        assertEquals(Map.of(), StandbyMapDescriptor.decode("varve-standby".getBytes(StandardCharsets.US_ASCII), file), "header cut short");
        assertEquals(Map.of(), StandbyMapDescriptor.decode(new byte[StandbyMapDescriptor.HEADER.length()], file), "header's length of zeros");
        CorruptionException zeroed = assertThrows(CorruptionException.class,
                () -> StandbyMapDescriptor.decode(new byte[StandbyMapDescriptor.line(123, 456).length() * 3], file));
        assertTrue(zeroed.getMessage().contains("not a standby snapshot map"), "a map zeroed past its header lost its lines: " + zeroed.getMessage());
        assertEquals(Map.of(), StandbyMapDescriptor.decode((StandbyMapDescriptor.HEADER + "\0\0\0\0").getBytes(StandardCharsets.US_ASCII), file),
                "an append torn to zeros after the header");
        assertEquals(Map.of(3L, 4L, 5L, 6L), StandbyMapDescriptor.decode("3 4\n5 6\n7".getBytes(StandardCharsets.US_ASCII), file),
                "version 1: no header, no checksums, read as before");
        CorruptionException later = assertThrows(CorruptionException.class,
                () -> StandbyMapDescriptor.decode(("varve-standby-map 3\n" + StandbyMapDescriptor.line(1, 2)).getBytes(StandardCharsets.US_ASCII), file));
        assertTrue(later.getMessage().contains("unsupported standby snapshot map header 'varve-standby-map 3'"), later.getMessage());
        CorruptionException foreign = assertThrows(CorruptionException.class,
                () -> StandbyMapDescriptor.decode("varve-stXndby-map 2\n1 2 00000000\n".getBytes(StandardCharsets.US_ASCII), file));
        assertTrue(foreign.getMessage().contains("not a standby snapshot map"), foreign.getMessage());
    }

    /** Follows a store while it declares three snapshots; returns the standby's map as the follow left it. */
    private Map<Long, Long> follow(Path standby) throws Exception {
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), RecoveryMode.CHECKPOINT_RECOVERY_FILE));
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            Workload w = new Workload(5, 200);
            w.createTables(store);
            for (int i = 0; i < 200; i++) w.step(store);
            FollowedSnapshots held = new FollowedSnapshots();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, standby).follow(true).progress(held);
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (store.snapshots().isEmpty() && System.nanoTime() < deadline) w.step(store); // the image's snapshot
            long last = 0;
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 50; i++) w.step(store);
                last = store.snapshotNow();
            }
            while (held.latest() < last && System.nanoTime() < deadline) Thread.sleep(20);
            assertEquals(last, held.latest(), "the standby received the last snapshot");
            follow.stop();
            run.get(60, TimeUnit.SECONDS);
        }
        return Standby.snapshots(standby);
    }

    /** The map with the last digit of line {@code index}'s local id (its second field) changed to another digit. */
    private static byte[] flipLastDigitOfLocalId(byte[] map, int index) {
        byte[] damaged = map.clone();
        int at = 0;
        for (int line = -1; line < index; line++) at = indexOf(damaged, (byte) '\n', at) + 1; // past the header, then `index` lines
        int localEnd = indexOf(damaged, (byte) ' ', indexOf(damaged, (byte) ' ', at) + 1);
        if (localEnd < 0 || localEnd > indexOf(damaged, (byte) '\n', at)) localEnd = indexOf(damaged, (byte) '\n', at); // version 1: no checksum
        damaged[localEnd - 1] = (byte) ('0' + (damaged[localEnd - 1] - '0' + 1) % 10);
        return damaged;
    }

    private static int indexOf(byte[] b, byte what, int from) {
        for (int i = from; i < b.length; i++) if (b[i] == what) return i;
        return -1;
    }
}
