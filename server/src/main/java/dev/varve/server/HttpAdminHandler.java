package dev.varve.server;

import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.SimpleChannelInboundHandler;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.TooLongFrameException;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpRequest;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaderValues;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.QueryStringDecoder;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * HTTP glue of the admin endpoint: a request the codec could not decode (line or headers too long, malformed) gets
 * its 4xx and the connection is closed; a decoded one goes to {@link AdminRoutes} on the admin threads, not the event
 * loop, since a route may read pages. One connection's requests are answered one after another, in order (pipelined
 * requests too); when the admin threads are swamped the answer is 503. A failure inside a route is logged and
 * answered 500 without details.
 *
 * <p>Flow control, as on the shipping side ({@link ShipSender}): the next answer is computed only while the channel is
 * writable (below the high write-buffer watermark), and while it is not the connection is not read either, so a
 * client that pipelines requests and never reads its answers holds about one watermark plus one answer of memory;
 * its further requests wait in the sockets, and the idle timeout closes it once nothing moves.
 */
final class HttpAdminHandler extends SimpleChannelInboundHandler<FullHttpRequest> {
    private static final Logger LOG = LoggerFactory.getLogger(HttpAdminHandler.class);
    /** Query parameters decoded at most. */
    private static final int MAX_PARAMS = 16;

    private final AdminRoutes routes;
    private final HostCheck hostCheck;
    private final Executor adminThreads;
    /** The answer to this connection's previous request: the next one is computed after it. */
    private CompletableFuture<Void> previous = CompletableFuture.completedFuture(null);
    /** Completed when the channel is writable again; set while the next answer waits for that (event loop only). */
    private CompletableFuture<Void> writable;

    HttpAdminHandler(AdminRoutes routes, HostCheck hostCheck, Executor adminThreads) {
        super(false); // the request is released once answered, on an admin thread
        this.routes = routes;
        this.hostCheck = hostCheck;
        this.adminThreads = adminThreads;
    }

    @Override
    protected void channelRead0(ChannelHandlerContext ctx, FullHttpRequest req) {
        // after the previous answer, whatever became of it; the event loop is the only thread touching `previous`
        previous = previous.handle((ignored, failure) -> null).thenCompose(ignored -> whenWritable(ctx)).thenRunAsync(() -> {
            try {
                if (ctx.channel().isActive()) answer(ctx, req); // a closed connection's queued requests cost nothing
            } finally {
                req.release();
            }
        }, adminThreads).exceptionally(failure -> {
            Throwable cause = failure instanceof CompletionException && failure.getCause() != null ? failure.getCause() : failure;
            if (cause instanceof RejectedExecutionException) { // never ran: answer and release here
                send(ctx, req, AdminRoutes.Response.error(503, "the server is busy; try again"), false);
                req.release();
            } else {
                LOG.warn("admin request {} {} failed", req.method(), req.uri(), cause);
                ctx.close();
            }
            return null;
        });
    }

    /** Completes on the event loop once the channel is writable, or closed (the answer is then skipped). */
    private CompletableFuture<Void> whenWritable(ChannelHandlerContext ctx) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        ctx.executor().execute(() -> {
            Channel ch = ctx.channel();
            if (ch.isWritable() || !ch.isActive()) f.complete(null);
            else writable = f; // one answer at a time per connection: at most one waits
        });
        return f;
    }

    @Override
    public void channelWritabilityChanged(ChannelHandlerContext ctx) {
        boolean canWrite = ctx.channel().isWritable();
        // a client that does not take its answers is not read either: its requests stay in its socket, not our heap
        ctx.channel().config().setAutoRead(canWrite);
        if (canWrite) resume();
        ctx.fireChannelWritabilityChanged();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) throws Exception {
        resume();
        super.channelInactive(ctx);
    }

    private void resume() {
        CompletableFuture<Void> f = writable;
        writable = null;
        if (f != null) f.complete(null);
    }

    private void answer(ChannelHandlerContext ctx, FullHttpRequest req) {
        DecoderResult dr = req.decoderResult();
        if (dr.isFailure()) {
            Throwable c = dr.cause();
            // a line too long is the request line (414) when the request has no headers yet; one that got as far as
            // its chunked body had a chunk-size line too long, a malformed body (400). The aggregator has dropped the
            // chunked Transfer-Encoding by then, so the headers left are what tells.
            int status = c instanceof TooLongHttpHeaderException ? 431
                    : c instanceof TooLongHttpLineException ? (req.headers().isEmpty() ? 414 : 400)
                    : c instanceof TooLongFrameException ? 413 : 400;
            send(ctx, req, AdminRoutes.Response.error(status, "bad request: " + c.getMessage()), false);
            return;
        }
        if (req.protocolVersion().majorVersion() != 1) {
            send(ctx, req, AdminRoutes.Response.error(505, "HTTP/1.x only, not " + req.protocolVersion().text()), false);
            return;
        }
        if (!printableAscii(req.uri())) { // the decoder took raw bytes as Latin-1: a key would be looked up double-encoded
            send(ctx, req, AdminRoutes.Response.error(400, "the request target must be ASCII: percent-encode other characters as UTF-8 bytes (%C3%A9)"), false);
            return;
        }
        List<String> hosts = req.headers().getAll(HttpHeaderNames.HOST);
        if (hosts.size() > 1 || hosts.isEmpty() && req.protocolVersion().minorVersion() >= 1) { // RFC 9112 3.2: a 400
            send(ctx, req, AdminRoutes.Response.error(400, hosts.isEmpty() ? "an HTTP/1.1 request must have a Host header"
                    : "a request must have one Host header, this one has " + hosts.size()), false);
            return;
        }
        // a target in absolute form names the host itself, and a server takes it over the Host header (RFC 9112 3.2.2)
        String authority = authority(req.uri());
        String host = authority != null ? authority : hosts.isEmpty() ? null : hosts.get(0);
        String refused = hostCheck.refusal(host, req.headers().get(HttpHeaderNames.ORIGIN));
        if (refused != null) {
            send(ctx, req, AdminRoutes.Response.error(403, refused), false);
            return;
        }
        AdminRoutes.Response r;
        try {
            // one parameter past the limit is decoded, so a request with too many is refused, not cut short silently;
            // ';' is a character of a value (RFC 3986), not netty's default second separator: key=x;y looked up "x"
            QueryStringDecoder q = new QueryStringDecoder(originForm(req.uri()), StandardCharsets.UTF_8, true, MAX_PARAMS + 1, true);
            r = badQuery(q.rawQuery(), q.parameters());
            if (r == null) r = routes.handle(req.method().name(), q.path(), q.parameters());
        } catch (IllegalArgumentException e) { // a malformed escape in the URI
            r = AdminRoutes.Response.error(400, "bad request URI: " + e.getMessage());
        } catch (RuntimeException e) {
            LOG.warn("admin request {} {} failed", req.method(), req.uri(), e);
            r = AdminRoutes.Response.error(500, "internal error; the server log has the details");
        }
        // a 4xx here answered a request read whole (an absent key is a 404): the connection, and requests pipelined
        // behind it, go on; only an internal error ends it
        send(ctx, req, r, r.status() != 500 && HttpUtil.isKeepAlive(req));
    }

    private static boolean printableAscii(String target) {
        for (int i = 0; i < target.length(); i++) {
            char c = target.charAt(i);
            if (c <= ' ' || c > '~') return false;
        }
        return true;
    }

    /** The path and query of a request target in absolute form ({@code http://host/path?q}), which HTTP/1.1 servers accept too. */
    private static String originForm(String target) {
        int start = authorityStart(target);
        if (start < 0) return target;
        int path = target.indexOf('/', start);
        return path < 0 ? "/" : target.substring(path);
    }

    /** The host (and port) of a request target in absolute form, or null for one in origin form. */
    private static String authority(String target) {
        int start = authorityStart(target);
        if (start < 0) return null;
        int end = start;
        while (end < target.length() && "/?#".indexOf(target.charAt(end)) < 0) end++;
        String authority = target.substring(start, end);
        return authority.substring(authority.lastIndexOf('@') + 1); // without userinfo, which is not a host
    }

    /** Where a target in absolute form has its authority, past {@code scheme://}; -1 for one in origin form. */
    private static int authorityStart(String target) {
        int scheme = target.indexOf("://");
        return scheme <= 0 || target.startsWith("/") ? -1 : scheme + 3;
    }

    /**
     * A 400 for query parameters no route should see: more than {@value #MAX_PARAMS} (the rest would be dropped, an
     * {@code asOf} among them), or one whose escapes are not UTF-8 (the decoder turned them into U+FFFD, which would
     * look up another key); null when they are fine. The raw query is what tells: a U+FFFD sent UTF-8 encoded is a
     * character like any other.
     */
    private static AdminRoutes.Response badQuery(String rawQuery, Map<String, List<String>> params) {
        int n = 0;
        for (List<String> values : params.values()) n += values.size();
        if (n > MAX_PARAMS) return AdminRoutes.Response.error(400, "more than " + MAX_PARAMS + " query parameters");
        for (String component : rawQuery.split("&")) {
            if (!escapesAreUtf8(component)) {
                String name = QueryStringDecoder.decodeComponent(component.split("=", 2)[0], StandardCharsets.UTF_8);
                return AdminRoutes.Response.error(400, "query parameter " + name + " is not valid UTF-8 once decoded; give binary keys as keyHex");
            }
        }
        return null;
    }

    /** Whether the bytes a raw query component's escapes stand for, with its ASCII characters, are well-formed UTF-8. */
    private static boolean escapesAreUtf8(String raw) {
        byte[] bytes = new byte[raw.length()];
        int n = 0;
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%' && i + 2 < raw.length() && Character.digit(raw.charAt(i + 1), 16) >= 0 && Character.digit(raw.charAt(i + 2), 16) >= 0) {
                bytes[n++] = (byte) (Character.digit(raw.charAt(i + 1), 16) << 4 | Character.digit(raw.charAt(i + 2), 16));
                i += 2;
            } else {
                bytes[n++] = (byte) c; // the target is printable ASCII (checked before); a bad escape fails the decoder itself
            }
        }
        try {
            StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes, 0, n));
            return true;
        } catch (CharacterCodingException e) {
            return false;
        }
    }

    /**
     * Answers {@code status} with a JSON {@code message} and closes the connection: for what is refused before a
     * request reaches the routes (a request too slow to arrive, a body over the limit).
     */
    static void refuseAndClose(ChannelHandlerContext ctx, int status, String message) {
        send(ctx, HttpMethod.GET, AdminRoutes.Response.error(status, message), false);
    }

    /** The answer {@link #refuseAndClose} sends, for netty handlers that write it themselves. */
    static FullHttpResponse refusal(int status, String message) {
        return response(HttpMethod.GET, AdminRoutes.Response.error(status, message), false);
    }

    private static void send(ChannelHandlerContext ctx, FullHttpRequest req, AdminRoutes.Response r, boolean keepAlive) {
        FullHttpResponse res = response(req.method(), r, keepAlive);
        // an HTTP/1.0 client closes unless told the connection stays open
        if (keepAlive && req.protocolVersion().minorVersion() == 0) res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.KEEP_ALIVE);
        write(ctx, res, keepAlive);
    }

    private static void send(ChannelHandlerContext ctx, HttpMethod method, AdminRoutes.Response r, boolean keepAlive) {
        write(ctx, response(method, r, keepAlive), keepAlive);
    }

    private static void write(ChannelHandlerContext ctx, FullHttpResponse res, boolean keepAlive) {
        if (keepAlive) ctx.writeAndFlush(res);
        else ctx.writeAndFlush(res).addListener(ChannelFutureListener.CLOSE);
    }

    private static FullHttpResponse response(HttpMethod method, AdminRoutes.Response r, boolean keepAlive) {
        boolean head = HttpMethod.HEAD.equals(method);
        FullHttpResponse res = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.valueOf(r.status()),
                head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(r.body()));
        res.headers().set(HttpHeaderNames.CONTENT_TYPE, r.contentType());
        res.headers().setInt(HttpHeaderNames.CONTENT_LENGTH, r.body().length);
        res.headers().set(HttpHeaderNames.CACHE_CONTROL, HttpHeaderValues.NO_STORE);
        res.headers().set("X-Content-Type-Options", "nosniff");
        res.headers().set("Content-Security-Policy", "default-src 'self'");
        if (r.allow() != null) res.headers().set(HttpHeaderNames.ALLOW, r.allow());
        if (!keepAlive) res.headers().set(HttpHeaderNames.CONNECTION, HttpHeaderValues.CLOSE);
        return res;
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        LOG.debug("admin connection from {} failed: {}", ctx.channel().remoteAddress(), cause.toString());
        ctx.close();
    }
}
