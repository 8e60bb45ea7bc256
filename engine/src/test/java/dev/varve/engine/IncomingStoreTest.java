package dev.varve.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A transfer's target is locked from prepare to commit: a second transfer into it, from this JVM or another process,
 * is refused instead of wiping what the first is writing; once the first is gone (committed, or killed and its lock
 * with it) the rules of an ordinary target apply.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class IncomingStoreTest {
    @TempDir
    Path tmp;

    private static List<String> names(Path dir) throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    private static FixtureChildJvm.Result prepareInChild(Path target) {
        return FixtureChildJvm.run("-Xmx64m", 90, PrepareInChild.class, target.toString());
    }

    /**
     * What a transfer that failed before anything arrived leaves is removed, the target too when prepare made it; a
     * target holding anything is left exactly as it is, unfinished, and the lock is let go either way.
     */
    @Test
    void onlyATargetThatReceivedNothingIsDiscarded() throws IOException {
        Path created = tmp.resolve("created");
        IncomingStore fresh = IncomingStore.prepare(created);
        assertTrue(fresh.createdTarget());
        assertTrue(fresh.discardIfEmpty());
        assertFalse(fresh.isHeld());
        assertFalse(Files.exists(created));

        Path existing = Files.createDirectories(tmp.resolve("existing"));
        IncomingStore there = IncomingStore.prepare(existing);
        assertFalse(there.createdTarget());
        assertTrue(there.discardIfEmpty());
        assertEquals(List.of(), names(existing), "a directory that was there stays, empty as it was");

        Path begun = tmp.resolve("begun");
        IncomingStore part = IncomingStore.prepare(begun);
        Files.writeString(part.storeDir().resolve("data"), "part of an image");
        assertFalse(part.discardIfEmpty());
        assertFalse(part.isHeld(), "the lock is let go");
        assertEquals("part of an image", Files.readString(begun.resolve(Varve.INCOMING_DIR).resolve("data")));
        IncomingStore.prepare(begun).close(); // a rerun can take it
        assertThrows(IllegalStateException.class, part::discardIfEmpty, "once let go, it is not the transfer's to remove");
    }

    @Test
    void aSecondTransferIsRefusedWhileTheFirstWritesAndTheFirstCommitsWhole() throws IOException {
        Path target = tmp.resolve("target");
        try (IncomingStore first = IncomingStore.prepare(target)) {
            Files.writeString(first.storeDir().resolve("data"), "half of a store");

            IllegalStateException here = assertThrows(IllegalStateException.class, () -> IncomingStore.prepare(target));
            assertTrue(here.getMessage().contains(target.toString()), here.getMessage());
            FixtureChildJvm.Result there = prepareInChild(target);
            assertTrue(there.output().contains("REFUSED") && there.output().contains("in use by another process"), there::describe);
            assertEquals("half of a store", Files.readString(first.storeDir().resolve("data")), "the refused transfers wiped the first one's work");

            first.commit();
        }
        assertEquals(List.of("data", "varve.lock"), names(target));
        FixtureChildJvm.Result after = prepareInChild(target);
        assertTrue(after.output().contains("REFUSED") && after.output().contains("not empty"), after::describe);
        assertThrows(IllegalArgumentException.class, () -> IncomingStore.prepare(target));
        assertEquals("half of a store", Files.readString(target.resolve("data")));
    }

    /**
     * Committing while the store built in {@code storeDir()} is still open is refused and changes nothing: the commit
     * moved the files from under the open store and deleted its lock file, and the store's close then failed with a
     * StorageException (its checkpoint could not create its files in the directory moved away), leaving the committed
     * store to be recovered from its WAL.
     */
    @Test
    void aCommitWhileTheBuiltStoreIsOpenIsRefused() throws IOException {
        Path target = tmp.resolve("target");
        try (IncomingStore in = IncomingStore.prepare(target)) {
            Varve built = Varve.open(FixtureSupport.small(in.storeDir()).build());
            built.table("t").put(FixtureSupport.utf8("k"), FixtureSupport.utf8("v"));
            List<String> before = names(in.storeDir());
            IllegalStateException e = assertThrows(IllegalStateException.class, in::commit);
            assertTrue(e.getMessage().contains("close"), e.getMessage());
            assertEquals(before, names(in.storeDir()), "a refused commit moved nothing");
            assertTrue(Files.isDirectory(target.resolve(Varve.INCOMING_DIR)), "still marked unfinished");
            built.close();
            in.commit(); // closed, it goes up
        }
        try (Varve store = Varve.open(FixtureSupport.small(target).build())) {
            assertEquals("v", new String(store.table("t").get(FixtureSupport.utf8("k")), java.nio.charset.StandardCharsets.UTF_8));
        }
    }

    @Test
    void aTransferWhoseProcessDiedIsWipedByTheNext() throws IOException {
        Path target = tmp.resolve("cut");
        IncomingStore cut = IncomingStore.prepare(target);
        Files.writeString(cut.storeDir().resolve("data"), "cut short");
        cut.close(); // as a kill leaves it: the mark stays, the OS lock goes with the process
        assertThrows(IllegalStateException.class, () -> Varve.refuseUnfinishedTransfer(target));

        FixtureChildJvm.Result r = prepareInChild(target);
        assertTrue(r.output().contains("PREPARED"), r::describe);
        assertEquals(List.of(Varve.INCOMING_DIR, "varve.lock"), names(target));
        assertEquals(List.of(), names(target.resolve(Varve.INCOMING_DIR)));
    }

    @Test
    void aDiscardedTransferLeavesNothingBehind() throws IOException {
        Path target = tmp.resolve("discarded");
        IncomingStore s = IncomingStore.prepare(target);
        Files.writeString(s.storeDir().resolve("data"), "failed");
        s.discard();
        assertFalse(Files.exists(target));
        assertThrows(IllegalStateException.class, s::commit);

        Path existing = Files.createDirectories(tmp.resolve("existing"));
        IncomingStore.prepare(existing).discard();
        assertEquals(List.of(), names(existing), "a target that was there before stays, empty");
    }

    @Test
    void aTargetHoldingSomethingElseIsRefusedUntouched() throws IOException {
        Path target = Files.createDirectories(tmp.resolve("occupied"));
        Files.writeString(target.resolve("mine.txt"), "keep me");
        assertThrows(IllegalArgumentException.class, () -> IncomingStore.prepare(target));
        assertEquals(List.of("mine.txt"), names(target), "a refused target gets no lock file");
        Path file = Files.writeString(tmp.resolve("a-file"), "x");
        assertThrows(IllegalArgumentException.class, () -> IncomingStore.prepare(file));
    }

    /**
     * The unfinished mark vouches only for a directory a transfer left: {@code .incoming} and, beside it, its lock
     * file and the store entries a commit cut short moved up. A directory that also holds anything else (a home
     * directory with a {@code .incoming} of some other program's in it) was wiped whole, as any directory holding a
     * symbolic link named {@code .incoming} was taken for one.
     */
    @Test
    void anIncomingDirectoryBesideOtherFilesIsRefusedUntouched() throws IOException {
        Path target = Files.createDirectories(tmp.resolve("home"));
        Files.createDirectories(target.resolve(Varve.INCOMING_DIR));
        Files.writeString(target.resolve("mine.txt"), "keep me");
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> IncomingStore.prepare(target));
        assertTrue(e.getMessage().contains("[mine.txt]"), e.getMessage());
        assertEquals(List.of(Varve.INCOMING_DIR, "mine.txt"), names(target));

        Path elsewhere = Files.createDirectories(tmp.resolve("elsewhere"));
        Files.writeString(elsewhere.resolve("theirs.txt"), "keep me too");
        Path linked = Files.createDirectories(tmp.resolve("linked"));
        Files.createSymbolicLink(linked.resolve(Varve.INCOMING_DIR), elsewhere);
        assertThrows(IllegalArgumentException.class, () -> IncomingStore.prepare(linked));
        assertTrue(Files.isSymbolicLink(linked.resolve(Varve.INCOMING_DIR)));
        assertEquals(List.of("theirs.txt"), names(elsewhere));
    }

    /** A commit cut short between its renames left store entries beside the mark: that is still a transfer to start afresh. */
    @Test
    void aCommitCutShortIsWipedByTheNext() throws IOException {
        Path target = tmp.resolve("half-moved");
        IncomingStore cut = IncomingStore.prepare(target);
        for (String moved : new String[] {"pages", "wal", "archive"}) Files.writeString(Files.createDirectories(target.resolve(moved)).resolve("f"), "x");
        Files.createDirectories(cut.storeDir().resolve("checkpoints"));
        cut.close();
        try (IncomingStore again = IncomingStore.prepare(target)) {
            assertEquals(List.of(Varve.INCOMING_DIR, "varve.lock"), names(target));
            assertEquals(List.of(), names(again.storeDir()));
        }
    }

    /** Child JVM main: prepares the target and says how it went. */
    public static final class PrepareInChild {
        public static void main(String[] args) {
            try (IncomingStore s = IncomingStore.prepare(Path.of(args[0]))) {
                System.out.println("PREPARED " + s.storeDir());
            } catch (IllegalStateException | IllegalArgumentException e) {
                System.out.println("REFUSED " + e.getMessage());
            }
        }
    }
}
