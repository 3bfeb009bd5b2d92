/*
 * The HTTPS glue (sluice.http.tls): the credentials every handshake takes
 * (GnuTLS's certificate callback), their reload in two steps, and the
 * retired ones kept until the last connection that may use them closes.
 * Loading the files is transport/tls.c's.
 */
#include "transport/http_int.h"
#include "core/log.h"

#include <stdlib.h>

/* The credentials a new handshake takes. GnuTLS's retrieve callback
 * (http_on_cert) gets no pointer of ours, so the one HTTPS front end of the
 * process keeps them here; sl_http_start refuses a second one. */
static struct sl_tls *tls_now;

/* ---- TLS ------------------------------------------------------------------------------- */

/* gnutls_certificate_retrieve_function2, at every handshake: the current
 * credentials. GnuTLS neither frees nor changes what it is given, and uses
 * it for the session's life; a connection's close releases it
 * (http_tls_release). */
int http_on_cert(gnutls_session_t session, const gnutls_datum_t *req_ca, int nreq,
		 const gnutls_pk_algorithm_t *pk, int npk, gnutls_pcert_st **pcert,
		 unsigned *npcert, gnutls_privkey_t *key)
{
	if (!tls_now)
		return -1;
	*pcert = tls_now->pcert;
	*npcert = tls_now->npcert;
	*key = tls_now->key;
	return 0;
}

/* A connection accepted at epoch closed: every credential retired since
 * then has one holder fewer, and goes with its last. */
void http_tls_release(struct sl_http *h, uint64_t epoch)
{
	struct sl_list *n, *next;

	sl_list_each_safe(n, next, &h->retired) {
		struct retired *r = sl_list_entry(n, struct retired, link);
		if (r->epoch >= epoch && --r->holders == 0) {
			sl_list_remove(n);
			sl_log(SL_LOG_DEBUG, "http: TLS certificate serial %s released: the last "
			       "connection that could use it closed", r->tls->serial);
			sl_tls_unref(r->tls);
			free(r);
		}
	}
}

static void tls_describe(const struct sl_tls *t, const struct sl_tls_config *c, const char *what)
{
	sl_log(SL_LOG_INFO, "http: TLS certificate %s%s (serial %s, valid until %s)", c->cert_file,
	       what, *t->serial ? t->serial : "?", *t->until ? t->until : "?");
	if (t->expired)
		sl_log(SL_LOG_WARN, "http: the TLS certificate in %s is outside its validity period "
		       "(until %s): clients will refuse it", c->cert_file, *t->until ? t->until : "?");
}

/* sluice.http.tls at start: libmicrohttpd must have HTTPS and the
 * certificate callback (Debian's is linked with GnuTLS), and the files
 * must load. */
int http_tls_start(struct sl_http *h, const struct sl_tls_config *c, struct sl_err *err)
{
	int rc;
	if (tls_now) {
		sl_err_set(err, "sluice.http.tls: one HTTPS front end per process");
		return SL_ERR_STATE;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES ||
	    MHD_is_feature_supported(MHD_FEATURE_HTTPS_CERT_CALLBACK) != MHD_YES) {
		sl_err_set(err, "sluice.http.tls: this libmicrohttpd was built without HTTPS (or "
			   "without MHD_OPTION_HTTPS_CERT_CALLBACK); install one linked with GnuTLS, "
			   "or put a TLS proxy in front");
		return SL_ERR_STATE;
	}
	if ((rc = sl_tls_load(c, &tls_now, err)) < 0)
		return rc;
	h->tls = true;
	tls_describe(tls_now, c, "");
	return SL_OK;
}

int sl_http_tls_load(struct sl_http *h, const struct sl_config *cfg, struct sl_tls **out,
		     struct sl_err *err)
{
	const struct sl_tls_config *c = &cfg->http.tls;
	*out = NULL;
	if (h->tls != (c->cert_file != NULL)) {
		sl_log(SL_LOG_WARN, "config reload: turning sluice.http.tls %s takes a restart; "
		       "the front end keeps serving %s", h->tls ? "off" : "on",
		       h->tls ? "HTTPS with its current certificate" : "plain HTTP");
		return SL_OK;
	}
	return h->tls ? sl_tls_load(c, out, err) : SL_OK;
}

void sl_http_tls_swap(struct sl_http *h, const struct sl_config *cfg, struct sl_tls *t)
{
	if (!t)
		return;
	if (h->nconns) {
		struct retired *r = sl_alloc(sizeof(*r));
		r->tls = tls_now;
		r->epoch = h->tls_epoch;
		r->holders = h->nconns;
		sl_list_push_front(&h->retired, &r->link);
	} else {
		sl_tls_unref(tls_now);
	}
	tls_now = t;
	h->tls_epoch++;
	tls_describe(t, &cfg->http.tls, " loaded: new connections get it");
}

/* The front end's credentials given up, at its end or a failed start: the
 * current ones and those reloads retired (every connection is closed). */
void http_tls_free(struct sl_http *h)
{
	struct sl_list *n;

	while ((n = sl_list_first(&h->retired))) {
		struct retired *r = sl_list_entry(n, struct retired, link);
		sl_list_remove(n);
		sl_tls_unref(r->tls);
		free(r);
	}
	if (h->tls) {
		sl_tls_unref(tls_now);
		tls_now = NULL;
	}
}
