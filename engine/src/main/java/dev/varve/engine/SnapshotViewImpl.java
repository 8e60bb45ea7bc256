package dev.varve.engine;

import dev.varve.core.page.PageId;
import dev.varve.core.tree.BPlusTree;
import dev.varve.snapshot.AsOfPages;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/** {@link Varve#asOf}: the catalog and tables as of a snapshot, read through its page source. */
final class SnapshotViewImpl implements SnapshotView {
    private final Engine engine;
    private final AsOfPages pages;
    private final Catalog catalog;
    private final Map<String, ReadOnlyTable> tables = new ConcurrentHashMap<>();
    private volatile boolean closed;

    SnapshotViewImpl(Engine engine, AsOfPages pages) {
        this.engine = engine;
        this.pages = pages;
        this.catalog = new Catalog(pages);
    }

    @Override
    public long id() {
        return pages.snapshot();
    }

    @Override
    public List<String> tables() {
        checkOpen();
        List<String> names = new ArrayList<>();
        for (Catalog.Entry e : catalog.all()) names.add(e.name());
        return names;
    }

    @Override
    public Table table(String name) {
        checkOpen();
        TableRegistry.checkName(name);
        return tables.computeIfAbsent(name, n -> {
            Catalog.Entry e = catalog.find(n);
            BPlusTree[] trees = new BPlusTree[e == null ? 0 : e.partitions()];
            for (int p = 0; p < trees.length; p++) trees[p] = new BPlusTree(pages, PageId.fileId(e.id(), p));
            return new ReadOnlyTable(this, n, e == null ? null : e.options(), trees);
        });
    }

    void checkKey(byte[] key) {
        checkOpen();
        engine.limits.checkKey(key);
    }

    void checkOpen() {
        if (closed) throw new IllegalStateException("snapshot view " + id() + " is closed");
        engine.checkOpen();
    }

    @Override
    public void close() {
        closed = true;
        pages.close();
    }
}
