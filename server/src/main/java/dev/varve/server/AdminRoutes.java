package dev.varve.server;

import dev.varve.engine.CheckpointStats;
import dev.varve.engine.DroppedSnapshotInfo;
import dev.varve.engine.SnapshotInfo;
import dev.varve.engine.SnapshotNotFoundException;
import dev.varve.engine.SnapshotView;
import dev.varve.engine.Table;
import dev.varve.engine.Varve;
import dev.varve.engine.VarveMetrics;

import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/**
 * The admin endpoint's routes, apart from HTTP plumbing: each takes the request's method, path and query and gives a
 * {@link Response}. Bad input is a 4xx with a message saying what was wrong; nothing here ever answers with a stack
 * trace. Nothing writes unless the server was started with {@link ServerOptions#allowWrites}.
 *
 * <ul>
 *   <li>{@code GET /metrics}: Prometheus text.</li>
 *   <li>{@code GET /api/metrics}: the current figures as JSON.</li>
 *   <li>{@code GET /api/series}: the sampled figures over time.</li>
 *   <li>{@code GET /api/checkpoints}: the last checkpoints with their IEP-113 breakdowns.</li>
 *   <li>{@code GET /api/snapshots}: live snapshots (id, rank, declared, archive bytes) and recent drops (when, why).</li>
 *   <li>{@code GET /api/tables}: table names, partition counts and placements.</li>
 *   <li>{@code GET /api/get?table=T&key=K[&keyHex=H][&asOf=ID][&partition=P]}: one value, now or as of a snapshot
 *   (a caller-placed table needs the key's partition).</li>
 *   <li>{@code POST /api/snapshots?rank=R}, {@code POST /api/rank?id=ID&rank=R}: only with writes allowed.</li>
 * </ul>
 */
final class AdminRoutes {
    /** Drops listed by /api/snapshots. */
    static final int DROPPED_LISTED = 200;

    /** The routes that only read: GET, and HEAD for their headers. */
    private static final List<String> READ = List.of("GET", "HEAD");

    /** An answer: status, content type, body, and for a 405 the methods the resource does take (else null). */
    record Response(int status, String contentType, byte[] body, String allow) {
        Response(int status, String contentType, byte[] body) {
            this(status, contentType, body, null);
        }

        static Response json(int status, String json) {
            return new Response(status, "application/json; charset=utf-8", json.getBytes(StandardCharsets.UTF_8));
        }

        static Response error(int status, String message) {
            return json(status, new Json().beginObject().field("status", status).field("error", message).endObject().toString());
        }

        /** This answer with an {@code Allow} header naming {@code methods}. */
        Response allowing(String methods) {
            return new Response(status, contentType, body, methods);
        }
    }

    private final Varve store;
    private final MetricsSampler sampler;
    private final ShipCounters ship;
    private final boolean allowWrites;
    private final StaticFiles files = new StaticFiles();

    AdminRoutes(Varve store, MetricsSampler sampler, ShipCounters ship, boolean allowWrites) {
        this.store = store;
        this.sampler = sampler;
        this.ship = ship;
        this.allowWrites = allowWrites;
    }

    Response handle(String method, String path, Map<String, List<String>> query) {
        try {
            List<String> methods = methods(path);
            if (methods.isEmpty()) return Response.error(404, "no such resource: " + path);
            if (!methods.contains(method)) {
                String allow = String.join(", ", methods);
                return Response.error(405, "method " + method + " is not allowed on " + path + "; it takes " + allow).allowing(allow);
            }
            if (method.equals("POST")) return path.equals("/api/rank") ? rank(query) : declare(query);
            switch (path) {
                case "/metrics":
                    return new Response(200, PrometheusText.CONTENT_TYPE, PrometheusText.render(store.metrics(), sampler.archiveDeadBytes(),
                            store.snapshots().size(), ship).getBytes(StandardCharsets.UTF_8));
                case "/api/metrics": return Response.json(200, metrics());
                case "/api/series": return Response.json(200, series());
                case "/api/checkpoints": return Response.json(200, checkpoints());
                case "/api/snapshots": return Response.json(200, snapshots());
                case "/api/tables": return Response.json(200, tables());
                case "/api/get": return get(query);
                default: return files.get(path);
            }
        } catch (BadRequest e) {
            return Response.error(400, e.getMessage());
        } catch (SnapshotNotFoundException e) {
            return Response.error(404, e.getMessage());
        } catch (IllegalArgumentException e) {
            return Response.error(400, e.getMessage());
        } catch (IllegalStateException e) {
            return Response.error(503, "the store is not available: " + e.getMessage());
        }
    }

    /** The methods {@code path} takes; none for a path that is not a resource here. */
    private List<String> methods(String path) {
        switch (path) {
            case "/metrics", "/api/metrics", "/api/series", "/api/checkpoints", "/api/tables", "/api/get": return READ;
            case "/api/snapshots": return List.of("GET", "HEAD", "POST"); // POST declares one, when writes are allowed
            case "/api/rank": return List.of("POST");
            default: return files.get(path) != null ? READ : List.of();
        }
    }

    private String metrics() {
        VarveMetrics m = store.metrics();
        long deadBytes = sampler.archiveDeadBytes();
        Json j = new Json().beginObject()
                .field("walBytesWritten", m.walBytesWritten()).field("recoveryFileBytesWritten", m.recoveryFileBytesWritten())
                .field("checkpointsCompleted", m.checkpointsCompleted()).field("checkpointPagesWritten", m.checkpointPagesWritten())
                .field("throttledNanos", m.throttledNanos()).field("archiveBytes", m.archiveBytes())
                .field("archiveBytesReclaimed", m.archiveBytesReclaimed())
                .field("archiveBytesCopiedByRanking", m.archiveBytesCopiedByRanking()).field("diffCompactness", m.diffCompactness())
                .field("writes", m.writes()).field("reads", m.reads()).field("pagesRead", m.pagesRead()).field("pagesEvicted", m.pagesEvicted())
                .field("dirtyPages", m.dirtyPages()).field("copyOnWritePages", m.copyOnWritePages())
                .field("checkpointBufferUsedPages", m.checkpointBufferUsedPages()).field("checkpointBufferPages", m.checkpointBufferPages())
                .field("dataRegionAllocatedBytes", m.dataRegionAllocatedBytes())
                .field("failure", m.failure());
        j.name("archiveDeadBytes");
        if (deadBytes == MetricsSampler.UNKNOWN) j.value((String) null); // its measurement failed
        else j.value(deadBytes);
        j.name("archiveBytesPerLevel").beginArray();
        for (long b : m.archiveBytesPerLevel()) j.value(b);
        j.endArray();
        j.name("lastCheckpoint");
        checkpoint(j, m.lastCheckpoint(), 0);
        j.name("shipping").beginObject().field("imagesInProgress", ship.imagesInProgress()).field("imagesSent", ship.imagesSent())
                .field("imagesFailed", ship.imagesFailed()).field("pageBytesSent", ship.pageBytes())
                .field("followers", ship.followers()).field("changeBytesSent", ship.changeBytes()).endObject();
        return j.endObject().toString();
    }

    private String series() {
        Json j = new Json().beginObject().name("samples").beginArray();
        for (MetricsSampler.Sample s : sampler.samples()) {
            j.beginObject().field("time", s.millis()).field("writes", s.writes()).field("walBytes", s.walBytes())
                    .field("archiveBytes", s.archiveBytes()).field("dirtyPages", s.dirtyPages()).field("copyOnWritePages", s.copyOnWritePages())
                    .field("throttledNanos", s.throttledNanos()).field("checkpointBufferUsedPages", s.checkpointBufferUsedPages())
                    .field("checkpoints", s.checkpoints());
            j.name("archiveBytesPerLevel").beginArray();
            for (long b : s.archiveBytesPerLevel()) j.value(b);
            j.endArray().endObject();
        }
        return j.endArray().endObject().toString();
    }

    private String checkpoints() {
        Json j = new Json().beginObject().name("checkpoints").beginArray();
        for (MetricsSampler.SeenCheckpoint c : sampler.checkpoints()) checkpoint(j, c.stats(), c.seenMillis());
        return j.endArray().endObject().toString();
    }

    private static void checkpoint(Json j, CheckpointStats c, long seenMillis) {
        j.beginObject().field("id", c.id()).field("reason", c.reason()).field("pages", c.pages()).field("recoveryData", c.recoveryData())
                .field("recoveryDataBytes", c.recoveryDataBytes()).field("recoveryDataNanos", c.recoveryDataNanos())
                .field("pageWriteNanos", c.pageWriteNanos()).field("fsyncNanos", c.fsyncNanos()).field("lockHoldNanos", c.lockHoldNanos())
                .field("totalNanos", c.totalNanos()).field("copyOnWritePages", c.copyOnWritePages()).field("throttledNanos", c.throttledNanos())
                .field("walBytes", c.walBytes());
        if (seenMillis > 0) j.field("seen", seenMillis);
        j.endObject();
    }

    private String snapshots() {
        Json j = new Json().beginObject().name("live").beginArray();
        for (SnapshotInfo s : store.snapshots())
            j.beginObject().field("id", s.id()).field("rank", s.rank()).field("declared", s.declared().toEpochMilli()).field("archiveBytes", s.archiveBytes()).endObject();
        j.endArray().name("dropped").beginArray();
        for (DroppedSnapshotInfo d : store.droppedSnapshots(DROPPED_LISTED))
            j.beginObject().field("id", d.id()).field("dropped", d.dropped().toEpochMilli()).field("why", d.why()).endObject();
        return j.endArray().endObject().toString();
    }

    private String tables() {
        Json j = new Json().beginObject().name("tables").beginArray();
        for (String name : store.tables()) {
            Table t = store.table(name);
            j.beginObject().field("name", name).field("partitions", t.partitions()).field("callerPlaced", t.options().callerPlaced()).endObject();
        }
        return j.endArray().endObject().toString();
    }

    private Response get(Map<String, List<String>> q) {
        String table = required(q, "table");
        if (!store.tables().contains(table)) return Response.error(404, "no table named '" + table + "'");
        byte[] key = key(q);
        String asOf = optional(q, "asOf");
        String part = optional(q, "partition");
        int partition = part == null ? -1 : partition(part);
        byte[] value;
        Long snapshot = null;
        if (asOf == null) {
            value = read(store.table(table), partition, key);
        } else {
            snapshot = positiveLong("asOf", asOf);
            try (SnapshotView v = store.asOf(snapshot)) {
                value = v.tables().contains(table) ? read(v.table(table), partition, key) : null;
            }
        }
        Json j = new Json().beginObject().field("table", table).field("keyHex", HexFormat.of().formatHex(key));
        if (partition >= 0) j.field("partition", partition);
        j.name("asOf");
        if (snapshot == null) j.value((String) null);
        else j.value(snapshot.longValue());
        j.field("found", value != null);
        if (value != null) j.field("valueBytes", value.length).field("valueBase64", Base64.getEncoder().encodeToString(value));
        return Response.json(value != null ? 200 : 404, j.endObject().toString());
    }

    /**
     * The value of {@code key} in {@code t}, in partition {@code partition} when it is given (not -1): a caller-placed
     * table places keys by the caller's choice, so only its partition finds one.
     */
    private static byte[] read(Table t, int partition, byte[] key) {
        if (partition >= 0) return t.partition(partition).get(key);
        if (t.options() != null && t.options().callerPlaced())
            throw new BadRequest("table " + t.name() + " is caller-placed: give the key's partition as partition=P");
        return t.get(key);
    }

    private static int partition(String text) {
        try {
            int p = Integer.parseInt(text);
            if (p < 0) throw new BadRequest("partition must be >= 0, was " + p);
            return p;
        } catch (NumberFormatException e) {
            throw new BadRequest("partition is not a number: '" + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "'");
        }
    }

    private Response declare(Map<String, List<String>> q) {
        if (!allowWrites) return Response.error(403, "writing endpoints are off; start the server with writes allowed to declare snapshots");
        String rank = optional(q, "rank");
        long id = store.snapshotNow(rank == null ? 1 : positiveInt("rank", rank));
        return Response.json(201, new Json().beginObject().field("id", id).endObject().toString());
    }

    private Response rank(Map<String, List<String>> q) {
        if (!allowWrites) return Response.error(403, "writing endpoints are off; start the server with writes allowed to rank snapshots");
        long id = positiveLong("id", required(q, "id"));
        int rank = positiveInt("rank", required(q, "rank"));
        store.rank(id, rank);
        return Response.json(200, new Json().beginObject().field("id", id).field("rank", rank).endObject().toString());
    }

    private byte[] key(Map<String, List<String>> q) {
        String text = optional(q, "key");
        String hex = optional(q, "keyHex");
        if ((text == null) == (hex == null)) throw new BadRequest("give exactly one of key (UTF-8 text) and keyHex");
        byte[] key;
        if (text != null) {
            key = text.getBytes(StandardCharsets.UTF_8);
        } else {
            try {
                key = HexFormat.of().parseHex(hex);
            } catch (IllegalArgumentException e) {
                throw new BadRequest("keyHex is not hexadecimal: " + e.getMessage());
            }
        }
        if (key.length > store.maxKeyBytes()) throw new BadRequest("key of " + key.length + " bytes exceeds the maximum of " + store.maxKeyBytes());
        return key;
    }

    private static String required(Map<String, List<String>> q, String name) {
        String v = optional(q, name);
        if (v == null || v.isEmpty()) throw new BadRequest("missing query parameter '" + name + "'");
        return v;
    }

    private static String optional(Map<String, List<String>> q, String name) {
        List<String> v = q.get(name);
        if (v == null || v.isEmpty()) return null;
        if (v.size() > 1) throw new BadRequest("query parameter '" + name + "' given " + v.size() + " times");
        return v.get(0);
    }

    private static long positiveLong(String name, String text) {
        try {
            long v = Long.parseLong(text);
            if (v < 1) throw new BadRequest(name + " must be >= 1, was " + v);
            return v;
        } catch (NumberFormatException e) {
            throw new BadRequest(name + " is not a number: '" + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "'");
        }
    }

    private static int positiveInt(String name, String text) {
        long v = positiveLong(name, text);
        if (v > Integer.MAX_VALUE) throw new BadRequest(name + " is out of range: " + v);
        return (int) v;
    }

    /** A request the server cannot make sense of: 400 with the message. */
    private static final class BadRequest extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadRequest(String message) {
            super(message, null, false, false);
        }
    }
}
