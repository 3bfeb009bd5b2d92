/*
 * HTTPS credentials of the front end (sluice.http.tls): a certificate chain
 * and its private key read from PEM files into GnuTLS's abstract types,
 * checked (the key must belong to the first certificate) and counted by
 * reference, so that a reload can put new ones in place while handshakes
 * made with the old ones may still hold them (docs/internals/HTTP.md, "TLS").
 *
 * API:
 *   struct sl_tls *t;
 *   if (sl_tls_load(&cfg->http.tls, &t, &err) < 0) ... err.msg names the file
 *   t->pcert, t->npcert, t->key    what a handshake presents (borrowed from t)
 *   sl_tls_ref(t); sl_tls_unref(t);
 */
#ifndef SL_TRANSPORT_TLS_H
#define SL_TRANSPORT_TLS_H

#include "config/config.h"
#include "core/common.h"

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>

#define SL_TLS_FILE_MAX (1u << 20) /* bytes of one PEM file */
#define SL_TLS_CHAIN_MAX 16        /* certificates in certFile */

struct sl_tls {
	unsigned refs;               /* references beyond the first */
	gnutls_pcert_st pcert[SL_TLS_CHAIN_MAX];
	unsigned npcert;             /* the server's certificate first */
	gnutls_privkey_t key;
	char serial[2 * 20 + 1];     /* of the first certificate, hex (RFC 5280: at most 20 bytes) */
	char until[32];              /* its notAfter, "YYYY-MM-DD HH:MM:SS UTC" */
	bool expired;                /* notAfter is past, or notBefore is to come */
};

/* Reads c->cert_file and c->key_file (both set). Fails with a message that
 * names the key and the file: cannot be read, over SL_TLS_FILE_MAX, no
 * certificate, over SL_TLS_CHAIN_MAX certificates or not in order (the
 * server's first, each signed by the next), a key GnuTLS cannot read
 * (encrypted keys are not supported), or a key that does not belong to the
 * certificate. A certificate out of its validity period loads, with
 * t->expired set for the caller to warn about. */
int sl_tls_load(const struct sl_tls_config *c, struct sl_tls **out, struct sl_err *err) SL_MUST_USE;
struct sl_tls *sl_tls_ref(struct sl_tls *t);
void sl_tls_unref(struct sl_tls *t);

#endif
