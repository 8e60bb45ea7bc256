package dev.varve.engine;

import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.StorageException;
import dev.varve.core.page.PageAccess;
import dev.varve.core.page.PageId;
import dev.varve.core.tree.BPlusTree;
import dev.varve.core.tree.CorruptTreeException;
import dev.varve.core.tree.ScanBatch;
import dev.varve.snapshot.AsOfPages;
import dev.varve.snapshot.SnapshotRecord;

import dev.varve.config.VarveConfig;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Structural check of an open store (operator tools, on a read-only open): the catalog's and every partition's
 * B+tree, then for every live snapshot a read of every entry of its catalog and tables as of that snapshot — which
 * reads every archived page the snapshot reaches, so a Pagelog record or Maplog mapping it needs that fails its
 * checksum or was reclaimed (invariant I8) shows up — and the archive's own list of reachable but reclaimed
 * mappings. (A past tree is read, not verified page by page: pages that were free at the snapshot have no archived
 * pre-state, by design.)
 */
public final class StoreVerifier {
    /** Trees and snapshots checked, and damage found. */
    public record Result(int trees, int snapshots, long entries, List<StoreInspector.Damage> damage) {
    }

    /**
     * A whole check: {@code files} from {@link StoreInspector#checkFiles}, {@code structure} from a read-only open
     * (null when the open failed), every damage found once ({@code damage}), and why the store could not be checked
     * at all ({@code unusable}; null when it could).
     */
    public record Report(StoreInspector.FileCheck files, Result structure, List<StoreInspector.Damage> damage, String unusable) {
    }

    /**
     * Checks the store of {@code config} without changing a byte: every file's checksums, then — if it opens
     * read-only (recovered in memory when it crashed) — its trees, snapshots and archive mappings. A corruption
     * that stops the open is reported as damage; any other failure to open makes the store unusable.
     */
    public static Report verify(VarveConfig config) {
        if (config == null) throw new IllegalArgumentException("config must not be null");
        try {
            StoreLock probe = StoreLock.acquireShared(config.path()); // a writer's files are moving: checking them would find false damage
            if (probe != null) probe.release();
        } catch (IllegalStateException | StorageException x) {
            return new Report(null, null, List.of(), x.getMessage());
        }
        Varve store;
        MemoryOverlayIO recovered = new MemoryOverlayIO();
        try {
            store = Varve.openReadOnly(config, recovered); // holds the shared lock while the files are checked
        } catch (RuntimeException x) {
            return withoutOpen(config, x);
        }
        try (store) {
            // what the open's recovery cut of the archive (past the checkpoint mark), and the torn pages of an
            // interrupted checkpoint it put back, are not read by any open: not damage
            StoreInspector.FileCheck files = StoreInspector.checkFiles(config,
                    new StoreInspector.Recovered(recovered::diskBytesKept, pageId -> restoredByRecovery(store, pageId)));
            Result structure = verify(store);
            Set<StoreInspector.Damage> all = new LinkedHashSet<>(files.damage());
            all.addAll(structure.damage());
            return new Report(files, structure, dedupe(all), null);
        }
    }

    /**
     * Whether the read-only {@code store}'s recovery replaced page {@code pageId} — whose file fails its check — with
     * an image it did not read from that file: the page is then held in page memory (restored from physical WAL
     * records), or its file reads right through the open's overlay (restored from recovery files). A page open reads
     * from its file is loaded by this check and reported, as any read of it would be.
     */
    private static boolean restoredByRecovery(Varve store, long pageId) {
        try {
            store.engine().memory.copier().copyOut(pageId, java.nio.ByteBuffer.allocate(store.engine().config.pageSize()), 0);
            return true;
        } catch (StorageException x) {
            return false;
        }
    }

    /** The file checks of a store that does not open; what stopped the open is damage when it names a spot. */
    private static Report withoutOpen(VarveConfig config, RuntimeException failure) {
        // a file a newer release wrote (every reader's refusal of a format version it does not know says so: page
        // files, checkpoint markers, WAL segments and record types) is no damage: this build cannot check the store
        if (failure instanceof CorruptionException x && x.what() != null && x.what().contains("written by a newer release")) {
            return new Report(null, null, List.of(), "the store does not open: " + x.getMessage());
        }
        StoreInspector.FileCheck files;
        try {
            files = StoreInspector.checkFiles(config, StoreInspector.Recovered.NONE); // a directory without a store is reported, not refused
        } catch (StorageException x) {
            return new Report(null, null, List.of(), "cannot read the store's files: " + x.getMessage());
        }
        Set<StoreInspector.Damage> all = new LinkedHashSet<>(files.damage());
        if (failure instanceof CorruptionException x) {
            all.add(new StoreInspector.Damage(x.file(), x.offset(), "the store does not open: " + x.what()));
        } else if (all.isEmpty()) {
            return new Report(files, null, List.of(), "the store does not open: " + failure.getMessage());
        } // else: damage already found explains the failed open
        return new Report(files, null, dedupe(all), null);
    }

    /** One damage per file and offset (a bad page is seen by the file check and again by the tree walk). */
    private static List<StoreInspector.Damage> dedupe(Set<StoreInspector.Damage> all) {
        Map<String, StoreInspector.Damage> byPlace = new LinkedHashMap<>();
        for (StoreInspector.Damage d : all) byPlace.putIfAbsent(d.file() + "@" + d.offset(), d);
        return new ArrayList<>(byPlace.values());
    }

    private StoreVerifier() {
    }

    /** Checks {@code store}; reads only. */
    public static Result verify(Varve store) {
        if (store == null) throw new IllegalArgumentException("store must not be null");
        Engine e = store.engine();
        e.checkOpen();
        List<StoreInspector.Damage> damage = new ArrayList<>();
        int trees = 0;
        long entries = 0;
        for (int fileId : fileIds(e, e.memory)) {
            entries += check(e, new BPlusTree(e.memory, fileId), damage, "");
            trees++;
        }
        int snapshots = 0;
        for (SnapshotRecord r : e.archive.snapshots()) {
            AsOfPages pages;
            try {
                pages = AsOfPages.open(e.archive, e.memory, r);
            } catch (StorageException x) {
                damage.add(damage(e, x, "snapshot " + r.id() + ": "));
                continue;
            }
            if (pages == null) continue; // dropped meanwhile
            try {
                for (int fileId : fileIds(e, pages)) {
                    readAll(e, new BPlusTree(pages, fileId), damage, "as of snapshot " + r.id() + ": ");
                    trees++;
                }
            } catch (StorageException x) {
                damage.add(damage(e, x, "catalog as of snapshot " + r.id() + ": "));
            } finally {
                pages.close();
            }
            snapshots++;
        }
        try {
            for (String m : e.archive.reachableButReclaimed())
                damage.add(new StoreInspector.Damage(e.config.archivePath(), 0, "I8 broken: a live snapshot reaches a reclaimed mapping: " + m));
        } catch (StorageException x) { // a lost Maplog part the snapshots still need: damage to report, not a failed verify
            damage.add(damage(e, x, "archive mappings: "));
        }
        return new Result(trees, snapshots, entries, damage);
    }

    /** The catalog's file and every partition's, as the catalog read through {@code pages} lists them. */
    private static List<Integer> fileIds(Engine e, PageAccess pages) {
        List<Integer> ids = new ArrayList<>();
        ids.add(Catalog.FILE_ID);
        for (Catalog.Entry t : new Catalog(pages).all()) for (int p = 0; p < t.partitions(); p++) ids.add(PageId.fileId(t.id(), p));
        return ids;
    }

    /** Verifies one tree; returns its entries (0 when damaged). */
    private static long check(Engine e, BPlusTree tree, List<StoreInspector.Damage> damage, String context) {
        try {
            tree.verify();
            return tree.size();
        } catch (StorageException x) {
            damage.add(damage(e, x, context));
            return 0;
        }
    }

    /** Reads every entry of a past tree. */
    private static void readAll(Engine e, BPlusTree tree, List<StoreInspector.Damage> damage, String context) {
        try {
            byte[] from = null;
            while (true) {
                ScanBatch b = tree.scan(from, from == null, null, 512);
                if (!b.hasMore() || b.isEmpty()) return;
                from = b.lastKey();
            }
        } catch (StorageException x) {
            damage.add(damage(e, x, context));
        } catch (IllegalStateException x) { // the archive cannot say where a page it needs went
            damage.add(new StoreInspector.Damage(e.config.archivePath(), 0, context + x.getMessage()));
        }
    }

    private static StoreInspector.Damage damage(Engine e, StorageException x, String context) {
        if (x instanceof CorruptionException c) return new StoreInspector.Damage(c.file(), c.offset(), context + c.what());
        if (x instanceof CorruptTreeException t && t.pageId() != PageId.NONE) {
            long id = t.pageId();
            return new StoreInspector.Damage(e.store.pathOf(PageId.fileId(id)), e.store.offsetOf(id), context + "B+tree: " + t.getMessage());
        }
        return new StoreInspector.Damage(x.file() == null ? e.config.path() : x.file(), 0, context + x.getMessage());
    }
}
