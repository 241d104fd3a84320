// The only C in swift-tls-fixtures: OpenSSL's headers, plus `static inline` wrappers for the
// function-like macros and compound constants that Swift's Clang importer cannot see.
// Every wrapper is a one-liner; anything with logic belongs in Swift.
#ifndef TLS_FIXTURES_COPENSSL_SHIM_H
#define TLS_FIXTURES_COPENSSL_SHIM_H

#include <openssl/opensslv.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/ec.h>
#include <openssl/dh.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <openssl/x509_vfy.h>
#include <openssl/ocsp.h>
#include <openssl/provider.h>
#include <openssl/pkcs12.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/tls1.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
#include <openssl/param_build.h>
#ifndef OPENSSL_NO_CT
#include <openssl/ct.h>
#endif

// MARK: - SSL_CTX / SSL controls (macros over SSL_CTX_ctrl / SSL_ctrl)

static inline int shim_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_min_proto_version(ctx, v); }
static inline int shim_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int v) { return (int)SSL_CTX_set_max_proto_version(ctx, v); }
static inline long shim_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long m) { return SSL_CTX_set_session_cache_mode(ctx, m); }
static inline long shim_SSL_CTX_set_mode(SSL_CTX *ctx, long m) { return SSL_CTX_set_mode(ctx, m); }
static inline int shim_SSL_CTX_add1_chain_cert(SSL_CTX *ctx, X509 *x) { return (int)SSL_CTX_add1_chain_cert(ctx, x); }
static inline int shim_SSL_CTX_set_dh_auto(SSL_CTX *ctx, int onoff) { return (int)SSL_CTX_set_dh_auto(ctx, onoff); }
static inline int shim_SSL_CTX_set1_groups_list(SSL_CTX *ctx, const char *list) { return (int)SSL_CTX_set1_groups_list(ctx, list); }
static inline int shim_SSL_set_tlsext_host_name(SSL *s, const char *name) { return (int)SSL_set_tlsext_host_name(s, name); }
static inline int shim_SSL_get_peer_tmp_key(SSL *s, EVP_PKEY **pk) { return (int)SSL_get_peer_tmp_key(s, pk); }
static inline int shim_SSL_get_tmp_key(SSL *s, EVP_PKEY **pk) { return (int)SSL_get_tmp_key(s, pk); }
static inline int shim_SSL_get_negotiated_group(SSL *s) { return (int)SSL_get_negotiated_group(s); }

static inline long shim_SSL_CTX_set_max_cert_list(SSL_CTX *ctx, long m) { return SSL_CTX_set_max_cert_list(ctx, m); }

// MARK: - OCSP stapling (certificate status request, RFC 6066 §8)

/// The server's callback, run when a client asks for the certificate status.
typedef int (*shim_status_callback)(SSL *, void *);
static inline long shim_SSL_CTX_set_tlsext_status_cb(SSL_CTX *ctx, shim_status_callback cb) { return SSL_CTX_set_tlsext_status_cb(ctx, cb); }
static inline long shim_SSL_CTX_set_tlsext_status_arg(SSL_CTX *ctx, void *arg) { return SSL_CTX_set_tlsext_status_arg(ctx, arg); }
/// Takes ownership of `resp`, which must come from OPENSSL_malloc (see shim_OPENSSL_memdup).
static inline long shim_SSL_set_tlsext_status_ocsp_resp(SSL *s, unsigned char *resp, int len) { return SSL_set_tlsext_status_ocsp_resp(s, resp, len); }
static inline long shim_SSL_set_tlsext_status_type(SSL *s, int type) { return SSL_set_tlsext_status_type(s, type); }
static inline long shim_SSL_get_tlsext_status_ocsp_resp(SSL *s, const unsigned char **resp) { return SSL_get_tlsext_status_ocsp_resp(s, resp); }

// MARK: - Certificate Transparency (RFC 6962): the SCTs a server delivers, counted by where they came from
// The probe asks for SCTs (the signed_certificate_timestamp extension) with permissive validation: nothing is refused,
// the handshake only collects them. A build without CT (no-ct) asks for none and counts none.
#ifndef OPENSSL_NO_CT
static inline int shim_SSL_enable_ct_permissive(SSL *s) { return SSL_enable_ct(s, SSL_CT_VALIDATION_PERMISSIVE); }
static inline int shim_SSL_peer_sct_count(SSL *s) { const STACK_OF(SCT) *l = SSL_get0_peer_scts(s); return l ? sk_SCT_num(l) : 0; }
/// Where the SCT at `i` came from: one of the shim_SCT_SOURCE_* values.
static inline int shim_SSL_peer_sct_source(SSL *s, int i) { return (int)SCT_get_source(sk_SCT_value(SSL_get0_peer_scts(s), i)); }
static const int shim_SCT_SOURCE_TLS_EXTENSION = SCT_SOURCE_TLS_EXTENSION;
static const int shim_SCT_SOURCE_X509V3_EXTENSION = SCT_SOURCE_X509V3_EXTENSION;
static const int shim_SCT_SOURCE_OCSP_STAPLED_RESPONSE = SCT_SOURCE_OCSP_STAPLED_RESPONSE;
static inline int shim_has_ct(void) { return 1; }
#else
static inline int shim_SSL_enable_ct_permissive(SSL *s) { (void)s; return 0; }
static inline int shim_SSL_peer_sct_count(SSL *s) { (void)s; return 0; }
static inline int shim_SSL_peer_sct_source(SSL *s, int i) { (void)s; (void)i; return 0; }
static const int shim_SCT_SOURCE_TLS_EXTENSION = 1;
static const int shim_SCT_SOURCE_X509V3_EXTENSION = 2;
static const int shim_SCT_SOURCE_OCSP_STAPLED_RESPONSE = 3;
static inline int shim_has_ct(void) { return 0; }
#endif

// MARK: - The negotiated key-exchange group, by name
// OpenSSL 3.5+ negotiates the hybrid X25519MLKEM768 by default in TLS 1.3; a KEM group leaves no peer temporary key,
// so only its name says what was agreed. SSL_get0_group_name exists from OpenSSL 3.2; before that the wrapper answers
// NULL and Swift asks SSL_group_to_name(SSL_get_negotiated_group) instead (KeyExchangeName.negotiatedGroup).
#if OPENSSL_VERSION_NUMBER >= 0x30200000L
static inline const char *shim_SSL_get0_group_name(SSL *s) { return SSL_get0_group_name(s); }
static const int shim_HAS_SSL_get0_group_name = 1;
#else
static inline const char *shim_SSL_get0_group_name(SSL *s) { (void)s; return NULL; }
static const int shim_HAS_SSL_get0_group_name = 0;
#endif

// SSL_OP_* are built with SSL_OP_BIT(n), which the importer cannot evaluate.
static const uint64_t shim_SSL_OP_NO_TICKET = SSL_OP_NO_TICKET;
static const uint64_t shim_SSL_OP_NO_RENEGOTIATION = SSL_OP_NO_RENEGOTIATION;
static const uint64_t shim_SSL_OP_CIPHER_SERVER_PREFERENCE = SSL_OP_CIPHER_SERVER_PREFERENCE;
static const uint64_t shim_SSL_OP_NO_COMPRESSION = SSL_OP_NO_COMPRESSION;
static const long shim_SSL_MODE_RELEASE_BUFFERS = SSL_MODE_RELEASE_BUFFERS;
static const long shim_SSL_MODE_ENABLE_PARTIAL_WRITE = SSL_MODE_ENABLE_PARTIAL_WRITE;
static const long shim_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER = SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
static const long shim_SSL_SESS_CACHE_OFF = SSL_SESS_CACHE_OFF;
static const unsigned long shim_XN_FLAG_RFC2253 = XN_FLAG_RFC2253;

// MARK: - BIO

static inline long shim_BIO_set_mem_eof_return(BIO *b, int v) { return BIO_set_mem_eof_return(b, v); }
static inline long shim_BIO_get_mem_data(BIO *b, char **pp) { return BIO_get_mem_data(b, pp); }

// MARK: - Stacks (typed stack accessors are macros)

static inline int shim_sk_X509_num(const STACK_OF(X509) *sk) { return sk_X509_num(sk); }
static inline X509 *shim_sk_X509_value(const STACK_OF(X509) *sk, int i) { return sk_X509_value(sk, i); }
static inline STACK_OF(X509) *shim_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int shim_sk_X509_push(STACK_OF(X509) *sk, X509 *x) { return sk_X509_push(sk, x); }
/// Frees the stack only; the certificates stay owned by whoever owned them before.
static inline void shim_sk_X509_free(STACK_OF(X509) *sk) { sk_X509_free(sk); }
/// Frees the stack and the certificates in it.
static inline void shim_sk_X509_pop_free(STACK_OF(X509) *sk) { sk_X509_pop_free(sk, X509_free); }
static inline int shim_sk_X509_EXTENSION_num(const STACK_OF(X509_EXTENSION) *sk) { return sk_X509_EXTENSION_num(sk); }
static inline X509_EXTENSION *shim_sk_X509_EXTENSION_value(const STACK_OF(X509_EXTENSION) *sk, int i) {
    return sk_X509_EXTENSION_value(sk, i);
}
static inline STACK_OF(X509_EXTENSION) *shim_sk_X509_EXTENSION_new_null(void) { return sk_X509_EXTENSION_new_null(); }
static inline int shim_sk_X509_EXTENSION_push(STACK_OF(X509_EXTENSION) *sk, X509_EXTENSION *ext) {
    return sk_X509_EXTENSION_push(sk, ext);
}
static inline void shim_sk_X509_EXTENSION_pop_free(STACK_OF(X509_EXTENSION) *sk) {
    sk_X509_EXTENSION_pop_free(sk, X509_EXTENSION_free);
}
static inline int shim_sk_GENERAL_NAME_num(const GENERAL_NAMES *sk) { return sk_GENERAL_NAME_num(sk); }
static inline GENERAL_NAME *shim_sk_GENERAL_NAME_value(const GENERAL_NAMES *sk, int i) { return sk_GENERAL_NAME_value(sk, i); }
static inline void shim_GENERAL_NAMES_free(GENERAL_NAMES *gens) { GENERAL_NAMES_free(gens); }
static inline void shim_sk_X509_NAME_pop_free(STACK_OF(X509_NAME) *sk) { sk_X509_NAME_pop_free(sk, X509_NAME_free); }
static inline STACK_OF(X509_NAME) *shim_sk_X509_NAME_new_null(void) { return sk_X509_NAME_new_null(); }
static inline int shim_sk_X509_NAME_push(STACK_OF(X509_NAME) *sk, X509_NAME *n) { return sk_X509_NAME_push(sk, n); }
static inline int shim_sk_ASN1_OBJECT_num(const STACK_OF(ASN1_OBJECT) *sk) { return sk_ASN1_OBJECT_num(sk); }
static inline ASN1_OBJECT *shim_sk_ASN1_OBJECT_value(const STACK_OF(ASN1_OBJECT) *sk, int i) { return sk_ASN1_OBJECT_value(sk, i); }
static inline void shim_EXTENDED_KEY_USAGE_free(EXTENDED_KEY_USAGE *e) { EXTENDED_KEY_USAGE_free(e); }
static inline int shim_sk_OPENSSL_STRING_num(const STACK_OF(OPENSSL_STRING) *sk) { return sk_OPENSSL_STRING_num(sk); }
static inline const char *shim_sk_OPENSSL_STRING_value(const STACK_OF(OPENSSL_STRING) *sk, int i) { return sk_OPENSSL_STRING_value(sk, i); }
static inline int shim_sk_DIST_POINT_num(const STACK_OF(DIST_POINT) *sk) { return sk_DIST_POINT_num(sk); }
static inline DIST_POINT *shim_sk_DIST_POINT_value(const STACK_OF(DIST_POINT) *sk, int i) { return sk_DIST_POINT_value(sk, i); }
static inline void shim_CRL_DIST_POINTS_free(STACK_OF(DIST_POINT) *sk) { CRL_DIST_POINTS_free(sk); }
/// A distribution point's full name (its URIs), or NULL when it is absent or a relative name.
static inline GENERAL_NAMES *shim_DIST_POINT_fullname(const DIST_POINT *dp) { return dp->distpoint && dp->distpoint->type == 0 ? dp->distpoint->name.fullname : NULL; }
static inline int shim_sk_ASN1_INTEGER_num(const STACK_OF(ASN1_INTEGER) *sk) { return sk_ASN1_INTEGER_num(sk); }
static inline ASN1_INTEGER *shim_sk_ASN1_INTEGER_value(const STACK_OF(ASN1_INTEGER) *sk, int i) { return sk_ASN1_INTEGER_value(sk, i); }
static inline void shim_TLS_FEATURE_free(STACK_OF(ASN1_INTEGER) *sk) { sk_ASN1_INTEGER_pop_free(sk, ASN1_INTEGER_free); }

// MARK: - GENERAL_NAME (a tagged union)

static inline int shim_GENERAL_NAME_type(const GENERAL_NAME *gn) { return gn->type; }
/// The IA5String of a dNSName, or the OCTET STRING of an iPAddress; NULL for other kinds.
static inline const ASN1_STRING *shim_GENERAL_NAME_string(const GENERAL_NAME *gn) {
    switch (gn->type) {
    case GEN_DNS: return gn->d.dNSName;
    case GEN_IPADD: return gn->d.iPAddress;
    case GEN_EMAIL: return gn->d.rfc822Name;
    case GEN_URI: return gn->d.uniformResourceIdentifier;
    default: return NULL;
    }
}

// MARK: - NAME_CONSTRAINTS (two stacks of GENERAL_SUBTREE)

static inline STACK_OF(GENERAL_SUBTREE) *shim_NAME_CONSTRAINTS_subtrees(const NAME_CONSTRAINTS *nc, int excluded) {
    return excluded ? nc->excludedSubtrees : nc->permittedSubtrees;
}
static inline int shim_sk_GENERAL_SUBTREE_num(const STACK_OF(GENERAL_SUBTREE) *sk) { return sk_GENERAL_SUBTREE_num(sk); }
/// The base name of the subtree at `i` (minimum and maximum are never used in the web PKI).
static inline const GENERAL_NAME *shim_GENERAL_SUBTREE_base(const STACK_OF(GENERAL_SUBTREE) *sk, int i) {
    const GENERAL_SUBTREE *subtree = sk_GENERAL_SUBTREE_value(sk, i);
    return subtree ? subtree->base : NULL;
}
static inline void shim_NAME_CONSTRAINTS_free(NAME_CONSTRAINTS *nc) { NAME_CONSTRAINTS_free(nc); }

// MARK: - Security callback operations
// SSL_SECOP_* are macros built from other macros; Swift imports none of them.

/// The category bits of a security operation (`SSL_SECOP_OTHER_TYPE`).
static inline int shim_SSL_SECOP_OTHER_TYPE(void) { return SSL_SECOP_OTHER_TYPE; }
/// The category of the four signature-algorithm operations (supported, shared, check, mask).
static inline int shim_SSL_SECOP_OTHER_SIGALG(void) { return SSL_SECOP_OTHER_SIGALG; }

// MARK: - Parameter names
// OSSL_PARAM_BLD keeps the key *pointer* until OSSL_PARAM_BLD_to_param; a Swift String bridged to char* lives only
// for the duration of one call, so keys must come from static storage.

static inline const char *shim_OSSL_PKEY_PARAM_FFC_P(void) { return OSSL_PKEY_PARAM_FFC_P; }
static inline const char *shim_OSSL_PKEY_PARAM_FFC_G(void) { return OSSL_PKEY_PARAM_FFC_G; }

// MARK: - Memory

static inline void shim_OPENSSL_free(void *p) { OPENSSL_free(p); }
static inline void *shim_OPENSSL_memdup(const void *p, size_t n) { return OPENSSL_memdup(p, n); }

#endif
